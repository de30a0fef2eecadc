// LlmModel.apiKeyRef says where the key is: `env:NAME` (each runner reads it from its own environment,
// a Kubernetes Secret), or `enc:v1:...`, a key entered through the admin API and stored encrypted
// (secret-box.ts), which a runner decrypts with CONVEYOR_SECRET_KEY. The bus never carries the key.
import { isEncrypted, SecretBox } from './secret-box.js';

/**
 * The key for `ref` (`env:NAME`, `enc:v1:...`, or empty for none). Throws when the variable is unset,
 * or the encrypted key cannot be decrypted (a SecretBoxError with its code).
 */
export function resolveApiKey(ref: string, env: Readonly<Record<string, string | undefined>> = process.env, box?: SecretBox): string | undefined {
  if (ref === '') return undefined;
  if (isEncrypted(ref)) return (box ?? SecretBox.fromEnv(env)).decrypt(ref);
  const match = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(ref);
  if (!match) throw new Error(`unsupported apiKeyRef ${JSON.stringify(ref)} (expected env:NAME, an encrypted key or empty)`);
  const value = env[match[1]];
  if (value === undefined) throw new Error(`environment variable ${match[1]} (apiKeyRef ${ref}) is not set`);
  return value;
}
