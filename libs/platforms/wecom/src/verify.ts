import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** WeCom pads to 32-byte blocks (PKCS#7 with block size 32), not AES's 16. */
const PAD_BLOCK = 32;
/** 16 random bytes and the 4-byte message length precede the message. */
const HEADER_BYTES = 20;

/** Why a callback's ciphertext was refused; the code is what callers branch on, the reason what they show. */
export type WecomCryptoErrorCode = 'undecryptable' | 'wrong_receiver';
export type DecryptResult = { ok: true; message: string } | { ok: false; code: WecomCryptoErrorCode; reason: string };

/** The 32-byte AES key: base64 of the EncodingAESKey with its missing `=`. */
export function wecomAesKey(encodingAesKey: string): Buffer {
  return Buffer.from(`${encodingAesKey}=`, 'base64');
}

/**
 * SHA-1 (hex) of the parts sorted and joined: WeChat's `signature` (token, timestamp, nonce) and the
 * `msg_signature` of WeChat's and WeCom's encrypted messages (the same with the ciphertext).
 */
export function sortedSha1(parts: readonly string[]): string {
  return createHash('sha1').update([...parts].sort().join('')).digest('hex');
}

/** Constant-time check of a `sortedSha1` signature. */
export function verifySortedSha1(parts: readonly string[], signature: string | undefined): boolean {
  if (!signature) return false;
  const want = Buffer.from(sortedSha1(parts), 'utf8');
  const got = Buffer.from(signature.toLowerCase(), 'utf8');
  return want.length === got.length && timingSafeEqual(want, got);
}

/** `msg_signature`: SHA-1 (hex) of token, timestamp, nonce and ciphertext, sorted and joined. */
export function wecomSignature(token: string, timestamp: string, nonce: string, encrypted: string): string {
  return sortedSha1([token, timestamp, nonce, encrypted]);
}

/** Constant-time check of a callback's `msg_signature`. */
export function verifyWecomSignature(token: string, timestamp: string, nonce: string, encrypted: string, signature: string | undefined): boolean {
  return verifySortedSha1([token, timestamp, nonce, encrypted], signature);
}

/**
 * Decrypts a callback's `Encrypt` (or a URL check's `echostr`): AES-256-CBC with the key's first 16
 * bytes as IV, PKCS#7 to 32-byte blocks, then 16 random bytes, the message length (network order),
 * the message and the receiver id, which must be this bot's (a WeCom corp id, a WeChat AppID). Never throws.
 */
export function decryptWecom(encodingAesKey: string, encrypted: string, receiverId: string): DecryptResult {
  const fail = (reason: string): DecryptResult => ({ ok: false, code: 'undecryptable', reason });
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encrypted)) return fail('the ciphertext is not base64');
  const cipher = Buffer.from(encrypted, 'base64');
  if (cipher.length === 0 || cipher.length % 16 !== 0) return fail('the ciphertext is not whole AES blocks');
  const key = wecomAesKey(encodingAesKey);
  let plain: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-cbc', key, key.subarray(0, 16));
    decipher.setAutoPadding(false);
    plain = Buffer.concat([decipher.update(cipher), decipher.final()]);
  } catch {
    return fail('the ciphertext does not decrypt with this EncodingAESKey');
  }
  const pad = plain[plain.length - 1] ?? 0;
  if (pad < 1 || pad > PAD_BLOCK || pad > plain.length || !plain.subarray(plain.length - pad).every((b) => b === pad)) {
    return fail('the padding is wrong (another EncodingAESKey?)');
  }
  const content = plain.subarray(0, plain.length - pad);
  if (content.length < HEADER_BYTES) return fail('the plaintext is too short');
  const length = content.readUInt32BE(16);
  if (HEADER_BYTES + length > content.length) return fail('the message length is past the plaintext');
  const message = content.subarray(HEADER_BYTES, HEADER_BYTES + length).toString('utf8');
  const receiver = content.subarray(HEADER_BYTES + length).toString('utf8');
  if (receiver !== receiverId) return { ok: false, code: 'wrong_receiver', reason: 'the message is encrypted for another corp id' };
  return { ok: true, message };
}

/** Encrypts a message for `receiverId` as WeCom does (the fake WeCom's callbacks, and passive replies). */
export function encryptWecom(encodingAesKey: string, message: string, receiverId: string, random: Buffer = randomBytes(16)): string {
  const body = Buffer.from(message, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length, 0);
  const content = Buffer.concat([random, length, body, Buffer.from(receiverId, 'utf8')]);
  const pad = PAD_BLOCK - (content.length % PAD_BLOCK);
  const key = wecomAesKey(encodingAesKey);
  const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(Buffer.concat([content, Buffer.alloc(pad, pad)])), cipher.final()]).toString('base64');
}
