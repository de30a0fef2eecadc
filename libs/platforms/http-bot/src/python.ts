/**
 * Python value semantics that leak into LangBot's wire behaviour: `str()`/`repr()` of parsed JSON
 * values (session ids, "Invalid component data" texts), truthiness (config flags, `x or default`)
 * and `json.dumps(..., ensure_ascii=False)` (callback bodies are signed, so bytes must match).
 *
 * JSON values are modelled after `JSON.parse`: a JS number is rendered as a Python int when it is
 * integral, since JSON.parse cannot tell `1` from `1.0`.
 */

/** Python refuses deeper structures with RecursionError; we bound recursion the same way. */
export const MAX_REPR_DEPTH = 100;

export class PythonRecursionError extends Error {
  constructor() {
    super('maximum recursion depth exceeded');
  }
}

export function pyTruthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (typeof value === 'number' && Number.isNaN(value)) return true; // float('nan') is truthy
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/** Python's type name of a JSON value, as it appears in `'str' object has no attribute 'get'`. */
export function pyTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'NoneType';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (typeof value === 'string') return 'str';
  if (Array.isArray(value)) return 'list';
  return 'dict';
}

function intText(n: number): string {
  return BigInt(n).toString();
}

/** `float.__repr__`: shortest round-trip digits, scientific below 1e-4 and from 1e16 up. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mant, expText] = Math.abs(x).toExponential().split('e');
  const exp = Number(expText);
  const digits = mant.replace('.', '');
  const sign = x < 0 ? '-' : '';
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp).toString().padStart(2, '0');
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const frac = digits.slice(exp + 1);
  return `${sign}${intPart}.${frac || '0'}`;
}

function pyNumberRepr(n: number): string {
  return Number.isInteger(n) ? intText(n) : pyFloatRepr(n);
}

// str.isprintable() is false for categories C* and Z* except the ASCII space.
const NON_PRINTABLE = /[\p{C}\p{Z}]/u;

export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) {
      if (cp <= 0xff) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`;
      else out += `\\U${cp.toString(16).padStart(8, '0')}`;
    } else out += ch;
  }
  return out + quote;
}

export function pyRepr(value: unknown, depth = 0): string {
  if (depth > MAX_REPR_DEPTH) throw new PythonRecursionError();
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return pyNumberRepr(value);
  if (typeof value === 'string') return pyStrRepr(value);
  if (Array.isArray(value)) return `[${value.map((v) => pyRepr(v, depth + 1)).join(', ')}]`;
  if (typeof value === 'object') {
    const items = Object.entries(value).map(([k, v]) => `${pyStrRepr(k)}: ${pyRepr(v, depth + 1)}`);
    return `{${items.join(', ')}}`;
  }
  return String(value);
}

/** Python `str(value)` of a parsed JSON value. */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyRepr(value);
}

function jsonEscapeChar(ch: string): string {
  switch (ch) {
    case '"':
      return '\\"';
    case '\\':
      return '\\\\';
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    case '\b':
      return '\\b';
    case '\f':
      return '\\f';
    default:
      return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  }
}

/** With ensure_ascii=False Python escapes only the quote, the backslash and C0 controls. */
export function pyJsonString(s: string): string {
  return `"${s.replace(/[\u0000-\u001f"\\]/g, jsonEscapeChar)}"`;
}

/** `json.dumps(value, ensure_ascii=False)` with default separators; objects keep insertion order. */
export function pyJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN';
    if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
    return pyNumberRepr(value);
  }
  if (typeof value === 'string') return pyJsonString(value);
  if (Array.isArray(value)) return `[${value.map(pyJsonDumps).join(', ')}]`;
  if (typeof value === 'object') {
    const items = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${pyJsonString(k)}: ${pyJsonDumps(v)}`);
    return `{${items.join(', ')}}`;
  }
  throw new TypeError(`Object of type ${typeof value} is not JSON serializable`);
}
