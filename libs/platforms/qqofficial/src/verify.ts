import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/** An Ed25519 private key in PKCS#8 DER is this prefix and the 32-byte seed. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SEED_BYTES = 32;
const SIGNATURE_HEX = /^[0-9a-fA-F]{128}$/;

/** QQ's seed: the bot secret repeated until it is 32 bytes long, cut there. */
export function seedOf(secret: string): Buffer {
  let seed = Buffer.from(secret, 'utf8');
  if (seed.length === 0) throw new Error('the bot secret is empty');
  while (seed.length < SEED_BYTES) seed = Buffer.concat([seed, seed]);
  return seed.subarray(0, SEED_BYTES);
}

/** The Ed25519 key pair of a 32-byte seed (RFC 8032's private key). */
export function keyPairFromSeed(seed: Buffer): { privateKey: KeyObject; publicKey: KeyObject } {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

/** The Ed25519 key pair QQ derives from the bot secret. */
export function keyPairOf(secret: string): { privateKey: KeyObject; publicKey: KeyObject } {
  return keyPairFromSeed(seedOf(secret));
}

/** Signs `message` (hex), as QQ signs a callback and as the URL validation wants it answered. */
export function signHex(secret: string, message: string | Buffer): string {
  return sign(null, typeof message === 'string' ? Buffer.from(message, 'utf8') : message, keyPairOf(secret).privateKey).toString('hex');
}

/**
 * Whether `X-Signature-Ed25519` is QQ's signature of `X-Signature-Timestamp` followed by the exact
 * body bytes, under the key derived from the bot secret.
 */
export function verifyCallback(secret: string, timestamp: string, rawBody: Buffer, signatureHex: string): boolean {
  if (!SIGNATURE_HEX.test(signatureHex) || !/^\d{1,20}$/.test(timestamp)) return false;
  return verify(null, Buffer.concat([Buffer.from(timestamp, 'utf8'), rawBody]), keyPairOf(secret).publicKey, Buffer.from(signatureHex, 'hex'));
}
