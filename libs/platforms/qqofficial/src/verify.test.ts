import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sign } from 'node:crypto';
import { keyPairFromSeed, seedOf, signHex, verifyCallback } from './verify.js';

test('an Ed25519 key from a seed is RFC 8032\'s (test 1: public key and the signature of the empty message)', () => {
  const { privateKey, publicKey } = keyPairFromSeed(Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex'));
  assert.equal(publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex'), 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
  assert.equal(sign(null, Buffer.alloc(0), privateKey).toString('hex'), 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b');
});

test('the seed is the secret repeated to 32 bytes and cut there', () => {
  assert.equal(seedOf('abc').toString(), 'abcabcabcabcabcabcabcabcabcabcab');
  assert.equal(seedOf('x'.repeat(40)).length, 32);
  assert.throws(() => seedOf(''), /empty/);
});

test('a callback verifies over timestamp + body; another body, timestamp, secret or a malformed signature does not', () => {
  const secret = 'DG5g3B4j9X2KOErG';
  const body = Buffer.from('{"op":0,"t":"C2C_MESSAGE_CREATE"}');
  const sig = signHex(secret, Buffer.concat([Buffer.from('1725442341'), body]));
  assert.equal(verifyCallback(secret, '1725442341', body, sig), true);
  assert.equal(verifyCallback(secret, '1725442342', body, sig), false);
  assert.equal(verifyCallback(secret, '1725442341', Buffer.from('{"op":0}'), sig), false);
  assert.equal(verifyCallback('another-secret', '1725442341', body, sig), false);
  assert.equal(verifyCallback(secret, '1725442341', body, sig.slice(2)), false);
  assert.equal(verifyCallback(secret, '1725442341', body, 'zz'.repeat(64)), false);
  assert.equal(verifyCallback(secret, 'not-a-time', body, sig), false);
});
