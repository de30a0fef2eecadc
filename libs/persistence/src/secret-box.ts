// Secrets entered through the admin API (a model's API key) are stored encrypted: AES-256-GCM with a
// key from CONVEYOR_SECRET_KEY, each ciphertext carrying the id of the key that made it, so keys can
// be rotated: a new current key encrypts, the previous ones (CONVEYOR_SECRET_KEY_PREVIOUS) still
// decrypt until every row has been re-encrypted. The key never reaches the database or a log.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const SECRET_KEY_ENV = 'CONVEYOR_SECRET_KEY';
export const PREVIOUS_SECRET_KEYS_ENV = 'CONVEYOR_SECRET_KEY_PREVIOUS';
/** The stored form: `enc:v1:<keyId>:<base64url(iv ‖ tag ‖ ciphertext)>`. */
export const ENCRYPTED_PREFIX = 'enc:v1:';

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Binds a ciphertext to its purpose, so a value encrypted for something else does not decrypt as an API key. */
const AAD = Buffer.from('conveyor secret v1');

export type SecretBoxErrorCode = 'missing_key' | 'bad_key' | 'unknown_key_id' | 'malformed' | 'tampered';

export class SecretBoxError extends Error {
  constructor(readonly code: SecretBoxErrorCode, message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

interface Key {
  id: string;
  bytes: Buffer;
}

/** 32 bytes, written as base64 (44 characters) or hex (64 characters). */
export function parseSecretKey(text: string, name = SECRET_KEY_ENV): Buffer {
  const trimmed = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (bytes.length !== 32) {
    throw new SecretBoxError('bad_key', `${name} must be 32 bytes as base64 or hex (e.g. \`openssl rand -base64 32\`); it decodes to ${bytes.length} bytes`);
  }
  return bytes;
}

/** A short, stable name for a key that says nothing about it. */
export function secretKeyId(key: Buffer): string {
  return createHash('sha256').update('conveyor key id\0').update(key).digest('hex').slice(0, 12);
}

/** The current key (encrypts and decrypts) and any previous keys (decrypt only). */
export class SecretBox {
  private readonly byId: Map<string, Key>;

  constructor(private readonly current: Key | undefined, previous: Key[] = []) {
    this.byId = new Map([...previous, ...(current ? [current] : [])].map((k) => [k.id, k]));
  }

  static fromKeys(current: Buffer | undefined, previous: Buffer[] = []): SecretBox {
    const key = (bytes: Buffer): Key => ({ id: secretKeyId(bytes), bytes });
    return new SecretBox(current ? key(current) : undefined, previous.map(key));
  }

  /** From CONVEYOR_SECRET_KEY and CONVEYOR_SECRET_KEY_PREVIOUS (comma-separated); both optional. */
  static fromEnv(env: Readonly<Record<string, string | undefined>> = process.env): SecretBox {
    const current = env[SECRET_KEY_ENV] ? parseSecretKey(env[SECRET_KEY_ENV]) : undefined;
    const previous = (env[PREVIOUS_SECRET_KEYS_ENV] ?? '').split(',').map((s) => s.trim()).filter(Boolean).map((s) => parseSecretKey(s, PREVIOUS_SECRET_KEYS_ENV));
    return SecretBox.fromKeys(current, previous);
  }

  get canEncrypt(): boolean {
    return this.current !== undefined;
  }

  get currentKeyId(): string | undefined {
    return this.current?.id;
  }

  encrypt(plaintext: string): string {
    if (!this.current) throw new SecretBoxError('missing_key', `${SECRET_KEY_ENV} is not set, so secrets cannot be stored encrypted`);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.bytes, iv);
    cipher.setAAD(AAD);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${ENCRYPTED_PREFIX}${this.current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  decrypt(stored: string): string {
    const { keyId, blob } = parseEncrypted(stored);
    const key = this.byId.get(keyId);
    if (!key) {
      throw new SecretBoxError('unknown_key_id', `the secret was encrypted with key ${keyId}, which is neither ${SECRET_KEY_ENV} nor in ${PREVIOUS_SECRET_KEYS_ENV}`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, blob.subarray(0, IV_BYTES));
    decipher.setAAD(AAD);
    decipher.setAuthTag(blob.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(blob.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError('tampered', `the secret encrypted with key ${keyId} fails its integrity check (altered, or a different key with the same id)`);
    }
  }

  /** Whether `stored` was encrypted with a key other than the current one (rotation re-encrypts it). */
  needsReencryption(stored: string): boolean {
    return this.current !== undefined && encryptedKeyId(stored) !== this.current.id;
  }
}

export function isEncrypted(stored: string): boolean {
  return stored.startsWith(ENCRYPTED_PREFIX);
}

/** The key id of an encrypted value. */
export function encryptedKeyId(stored: string): string {
  return parseEncrypted(stored).keyId;
}

function parseEncrypted(stored: string): { keyId: string; blob: Buffer } {
  const match = /^enc:v1:([0-9a-f]{1,64}):([A-Za-z0-9_-]+)$/.exec(stored);
  if (!match) throw new SecretBoxError('malformed', 'the stored secret is not in the form enc:v1:<keyId>:<data>');
  const blob = Buffer.from(match[2], 'base64url');
  if (blob.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError('malformed', 'the stored secret is too short to be a ciphertext');
  return { keyId: match[1], blob };
}
