// Bot adapter settings and MCP server settings hold secrets (an inbound secret, a bot token, an
// Authorization header). The API returns them masked, and a masked value sent back means "keep what is
// stored", so a console can round-trip a settings form without ever seeing the secrets.
import { AdminApi } from '@conveyor/contracts';
import { AdminApiError } from './errors.js';

const SECRET_KEY = /secret|token|password|passwd|api[-_]?key|authorization|credential|private[-_]?key|signature|cookie/i;
/** Characters shown at the end of a masked secret, only when the secret is long enough to keep it secret. */
const VISIBLE = 4;
const MIN_LENGTH_TO_SHOW = 16;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

function maskValue(value: string): string {
  // A reference names where the secret is, not the secret.
  if (value.startsWith('env:') || value === '') return value;
  return AdminApi.SECRET_MASK_PREFIX + (value.length >= MIN_LENGTH_TO_SHOW ? value.slice(-VISIBLE) : '');
}

/** A copy with every string under a secret-looking key masked, at any depth. */
export function maskSecrets(value: unknown, underSecret = false): unknown {
  if (typeof value === 'string') return underSecret ? maskValue(value) : value;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, underSecret));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, underSecret || isSecretKey(k))]));
  }
  return value;
}

export function isMasked(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith(AdminApi.SECRET_MASK_PREFIX);
}

/**
 * `incoming` with each masked value replaced by the stored value at the same key path. A masked value
 * where nothing is stored is an error naming the field (`where` prefixes the path).
 */
export function unmaskSecrets(incoming: unknown, stored: unknown, where: string): unknown {
  if (isMasked(incoming)) {
    if (typeof stored !== 'string') throw AdminApiError.invalid(where, 'is a masked secret, but no secret is stored here; send the value itself');
    return stored;
  }
  if (Array.isArray(incoming)) return incoming.map((v, i) => unmaskSecrets(v, Array.isArray(stored) ? stored[i] : undefined, `${where}[${i}]`));
  if (incoming !== null && typeof incoming === 'object') {
    const from = stored !== null && typeof stored === 'object' && !Array.isArray(stored) ? (stored as Record<string, unknown>) : {};
    return Object.fromEntries(Object.entries(incoming).map(([k, v]) => [k, unmaskSecrets(v, from[k], `${where}.${k}`)]));
  }
  return incoming;
}
