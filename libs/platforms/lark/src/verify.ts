import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const LARK_SIGNATURE_HEADER = 'x-lark-signature';
export const LARK_TIMESTAMP_HEADER = 'x-lark-request-timestamp';
export const LARK_NONCE_HEADER = 'x-lark-request-nonce';

const aesKey = (encryptKey: string) => createHash('sha256').update(encryptKey, 'utf8').digest();

/**
 * Decrypts an event's `encrypt` field as Lark encrypts it: AES-256-CBC, key = SHA-256 of the encrypt
 * key, the first 16 bytes of the base64-decoded value are the IV. Returns null when it does not
 * decrypt to JSON text. A wrong key passes the padding check about once in 256 tries and yields
 * noise: only the key Lark encrypted with gives back the JSON event, so noise is a wrong key too.
 */
export function decryptLarkEvent(encryptKey: string, encrypted: string): string | null {
  try {
    const raw = Buffer.from(encrypted, 'base64');
    if (raw.length < 32 || raw.length % 16 !== 0) return null;
    const decipher = createDecipheriv('aes-256-cbc', aesKey(encryptKey), raw.subarray(0, 16));
    const plain = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat([decipher.update(raw.subarray(16)), decipher.final()]));
    JSON.parse(plain);
    return plain;
  } catch {
    return null;
  }
}

/** The inverse of decryptLarkEvent (a random IV); what Lark sends, so tests can send it too. */
export function encryptLarkEvent(encryptKey: string, plain: string): string {
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', aesKey(encryptKey), iv);
  return Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final()]).toString('base64');
}

/** Hex SHA-256 of `timestamp + nonce + encrypt key + body`, as Lark signs a request. */
export function larkSignature(encryptKey: string, timestamp: string, nonce: string, body: Buffer): string {
  return createHash('sha256').update(timestamp + nonce + encryptKey, 'utf8').update(body).digest('hex');
}

export type LarkVerifyFailure = 'missing_headers' | 'signature_mismatch';

/** Checks a request's signature (constant time). */
export function verifyLarkSignature(
  encryptKey: string,
  headers: { signature: string | undefined; timestamp: string | undefined; nonce: string | undefined },
  body: Buffer,
): { ok: true } | { ok: false; reason: LarkVerifyFailure } {
  const { signature, timestamp, nonce } = headers;
  if (!signature || timestamp === undefined || nonce === undefined) return { ok: false, reason: 'missing_headers' };
  const want = Buffer.from(larkSignature(encryptKey, timestamp, nonce, body), 'utf8');
  const got = Buffer.from(signature, 'utf8');
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'signature_mismatch' };
  return { ok: true };
}
