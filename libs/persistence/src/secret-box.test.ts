import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { encryptedKeyId, parseSecretKey, SecretBox, SecretBoxError } from './secret-box.js';
import { resolveApiKey } from './api-key-ref.js';

const key = () => randomBytes(32);
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof SecretBoxError ? err.code : `not a SecretBoxError: ${String(err)}`;
  }
  return 'no error';
};

test('a secret round-trips, and each encryption of it differs', () => {
  const box = SecretBox.fromKeys(key());
  const a = box.encrypt('sk-live-123');
  const b = box.encrypt('sk-live-123');
  assert.notEqual(a, b);
  assert.ok(!a.includes('sk-live'));
  assert.equal(box.decrypt(a), 'sk-live-123');
  assert.equal(encryptedKeyId(a), box.currentKeyId);
});

test('a changed byte anywhere in the ciphertext fails the integrity check', () => {
  const box = SecretBox.fromKeys(key());
  const stored = box.encrypt('sk-live-123');
  const prefix = stored.slice(0, stored.lastIndexOf(':') + 1);
  const blob = Buffer.from(stored.slice(prefix.length), 'base64url');
  for (const at of [0, 13, blob.length - 1]) {
    const altered = Buffer.from(blob);
    altered[at] ^= 1;
    assert.equal(code(() => box.decrypt(prefix + altered.toString('base64url'))), 'tampered', `byte ${at}`);
  }
});

test('a value made with another key, or not a ciphertext at all, is refused by code', () => {
  const box = SecretBox.fromKeys(key());
  assert.equal(code(() => box.decrypt(SecretBox.fromKeys(key()).encrypt('x'))), 'unknown_key_id');
  assert.equal(code(() => box.decrypt('enc:v1:abc:!!')), 'malformed');
  assert.equal(code(() => SecretBox.fromKeys(undefined).encrypt('x')), 'missing_key');
});

test('rotation: the previous key still decrypts, the current one encrypts, and old values are flagged', () => {
  const [oldKey, newKey] = [key(), key()];
  const stored = SecretBox.fromKeys(oldKey).encrypt('sk-old');
  const rotated = SecretBox.fromKeys(newKey, [oldKey]);
  assert.equal(rotated.decrypt(stored), 'sk-old');
  assert.equal(rotated.needsReencryption(stored), true);
  assert.equal(rotated.needsReencryption(rotated.encrypt('sk-old')), false);
});

test('keys are read as base64 or hex and must be 32 bytes; the env carries current and previous keys', () => {
  const bytes = key();
  assert.deepEqual(parseSecretKey(bytes.toString('base64')), bytes);
  assert.deepEqual(parseSecretKey(bytes.toString('hex')), bytes);
  assert.equal(code(() => parseSecretKey('c2hvcnQ=')), 'bad_key');
  const old = key();
  const stored = SecretBox.fromKeys(old).encrypt('sk-env');
  const env = { CONVEYOR_SECRET_KEY: bytes.toString('base64'), CONVEYOR_SECRET_KEY_PREVIOUS: old.toString('hex') };
  assert.equal(resolveApiKey(stored, env), 'sk-env');
  assert.equal(resolveApiKey('env:CONVEYOR_KEY_K', { CONVEYOR_KEY_K: 'from-env' }), 'from-env');
  assert.equal(resolveApiKey(''), undefined);
});
