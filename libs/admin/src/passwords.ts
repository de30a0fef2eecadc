// Passwords are hashed with scrypt (node:crypto), a random salt per password, and compared in constant
// time. The stored form names its parameters, so they can be raised later without breaking old hashes.
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCallback(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));

/** OWASP's scrypt minimum (N=2^17, r=8, p=1) needs 128 MiB a hash; 2^15 keeps a login cheap enough for two cores. */
const DEFAULTS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const MAX_MEM = 256 * 1024 * 1024;

export async function hashPassword(password: string, params: { N: number; r: number; p: number } = DEFAULTS): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_BYTES, { ...params, maxmem: MAX_MEM });
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** False for a wrong password and for a stored value that is not a hash this code made. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0)) return false;
  const expected = Buffer.from(parts[5], 'base64');
  if (expected.length !== KEY_BYTES) return false;
  const actual = await scrypt(password, Buffer.from(parts[4], 'base64'), KEY_BYTES, { N, r, p, maxmem: MAX_MEM });
  return timingSafeEqual(actual, expected);
}

/**
 * A hash of a random password, for comparing against when the user does not exist, so that a login
 * for an unknown name costs as long as one with a wrong password.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('base64'));
  return decoy;
}
