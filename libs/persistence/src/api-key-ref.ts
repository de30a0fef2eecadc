// LlmModel.apiKeyRef says where the key is: `env:NAME` (each runner reads it from its own environment,
// a Kubernetes Secret), or `enc:v1:...`, a key entered through the admin API and stored encrypted
// (secret-box.ts), which a runner decrypts with CONVEYOR_SECRET_KEY. The bus never carries the key.
// External runners' settings (`api-key: env:NAME`) are resolved the same way.
import { isEncrypted, SecretBox } from './secret-box.js';

/**
 * Variables an `env:` reference may name without being listed: a reference is written by whoever
 * configures models and pipelines, and its value goes to a base URL they choose, so it must not reach
 * the process' other variables (DATABASE_URL, the NATS credentials, CONVEYOR_SECRET_KEY).
 */
export const KEY_ENV_PREFIX = 'CONVEYOR_KEY_';
/** Further names an `env:` reference may use, comma-separated: the deployment's own key variables. */
export const KEY_ENV_NAMES_ENV = 'CONVEYOR_KEY_ENV_NAMES';
/** KEY_ENV_NAMES_ENV when unset: the variable the shipped example config, compose and k8s use. */
export const DEFAULT_KEY_ENV_NAMES: readonly string[] = ['LLM_API_KEY'];

export type ApiKeyRefErrorCode = 'unsupported_ref' | 'env_not_allowed' | 'env_unset';

export class ApiKeyRefError extends Error {
  constructor(readonly code: ApiKeyRefErrorCode, message: string) {
    super(message);
    this.name = 'ApiKeyRefError';
  }
}

/** The names listed in CONVEYOR_KEY_ENV_NAMES (the default list when unset; none when set empty). */
export function allowedKeyEnvNames(env: Readonly<Record<string, string | undefined>> = process.env): readonly string[] {
  const listed = env[KEY_ENV_NAMES_ENV];
  if (listed === undefined) return DEFAULT_KEY_ENV_NAMES;
  return listed.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Whether an `env:NAME` reference may name this variable: `CONVEYOR_KEY_*`, or listed. */
export function isAllowedKeyEnv(name: string, env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return (name.startsWith(KEY_ENV_PREFIX) && name.length > KEY_ENV_PREFIX.length) || allowedKeyEnvNames(env).includes(name);
}

/**
 * The key for `ref` (`env:NAME`, `enc:v1:...`, or empty for none). Throws an ApiKeyRefError when the
 * reference names a variable outside `CONVEYOR_KEY_*` and CONVEYOR_KEY_ENV_NAMES or one that is
 * unset, and a SecretBoxError (with its code) when the encrypted key cannot be decrypted.
 */
export function resolveApiKey(ref: string, env: Readonly<Record<string, string | undefined>> = process.env, box?: SecretBox): string | undefined {
  if (ref === '') return undefined;
  if (isEncrypted(ref)) return (box ?? SecretBox.fromEnv(env)).decrypt(ref);
  const match = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(ref);
  if (!match) throw new ApiKeyRefError('unsupported_ref', `unsupported apiKeyRef ${JSON.stringify(ref)} (expected env:NAME, an encrypted key or empty)`);
  const name = match[1];
  if (!isAllowedKeyEnv(name, env)) {
    throw new ApiKeyRefError('env_not_allowed', `environment variable ${name} may not be used as a key: name it ${KEY_ENV_PREFIX}..., or list it in ${KEY_ENV_NAMES_ENV}`);
  }
  const value = env[name];
  if (value === undefined) throw new ApiKeyRefError('env_unset', `environment variable ${name} (apiKeyRef ${ref}) is not set`);
  return value;
}
