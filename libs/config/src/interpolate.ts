// `${NAME}` and `${NAME:-default}` in string values, with shell semantics: `:-` also applies when
// the variable is set but empty, and an unset variable without a default is an error rather than
// an empty string (an empty secret or URL would only fail later and less clearly).
import type { ConfigIssue } from './errors.js';
import { formatKeyPath } from './errors.js';

const REFERENCE = /\$\{([^}]*)\}/g;
const EXPRESSION = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;

export type Env = Readonly<Record<string, string | undefined>>;

function interpolateString(value: string, env: Env, path: PropertyKey[], issues: ConfigIssue[]): string {
  const out = value.replace(REFERENCE, (whole, expression: string) => {
    const match = EXPRESSION.exec(expression);
    if (!match) {
      issues.push({ path: formatKeyPath(path), message: `malformed variable reference ${whole} (expected \${NAME} or \${NAME:-default})` });
      return whole;
    }
    const [, name, fallback] = match;
    const current = env[name];
    if (fallback !== undefined) return current ? current : fallback;
    if (current === undefined) {
      issues.push({ path: formatKeyPath(path), message: `environment variable ${name} is not set (write \${${name}:-default} to give a default)` });
      return whole;
    }
    return current;
  });
  if (value.replace(REFERENCE, '').includes('${')) {
    issues.push({ path: formatKeyPath(path), message: 'unterminated variable reference "${" (missing "}")' });
  }
  return out;
}

/** A copy of `value` with every string interpolated; problems are appended to `issues`. */
export function interpolateEnv(value: unknown, env: Env, issues: ConfigIssue[], path: PropertyKey[] = []): unknown {
  if (typeof value === 'string') return interpolateString(value, env, path, issues);
  if (Array.isArray(value)) return value.map((item, i) => interpolateEnv(item, env, issues, [...path, i]));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: interpolateEnv(item, env, issues, [...path, key]), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}
