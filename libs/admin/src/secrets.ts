// Session cookies, API tokens and the setup token are random secrets shown once; only their sha256 is
// stored, so a database dump gives nobody a way in. sha256 (not scrypt) fits: they carry 256 bits.
import { createHash, randomBytes } from 'node:crypto';

/** A new secret with a recognisable prefix (`cvs_` session, `cvt_` API token, `cvsetup_` setup). */
export function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export const SESSION_PREFIX = 'cvs_';
export const API_TOKEN_PREFIX = 'cvt_';
export const SETUP_PREFIX = 'cvsetup_';
