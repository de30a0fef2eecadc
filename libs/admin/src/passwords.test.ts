import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashPassword, verifyPassword } from './passwords.js';
import { hashSecret, newSecret } from './secrets.js';

const FAST = { N: 1024, r: 8, p: 1 };

test('a password verifies against its hash and a different one does not', async () => {
  const stored = await hashPassword('correct horse battery', FAST);
  assert.match(stored, /^scrypt\$1024\$8\$1\$/);
  assert.ok(!stored.includes('correct horse'));
  assert.equal(await verifyPassword('correct horse battery', stored), true);
  assert.equal(await verifyPassword('correct horse batterY', stored), false);
});

test('two hashes of one password differ (a salt each), and the default parameters verify too', async () => {
  const [a, b] = await Promise.all([hashPassword('same password!', FAST), hashPassword('same password!')]);
  assert.notEqual(a, b);
  assert.equal(await verifyPassword('same password!', b), true);
});

test('a stored value that is not a hash of ours never verifies', async () => {
  for (const stored of ['', 'plain', 'scrypt$x$8$1$aa$bb', 'bcrypt$1$2$3$4$5', 'scrypt$1024$8$1$c2FsdA==$c2hvcnQ=']) {
    assert.equal(await verifyPassword('anything', stored), false, stored);
  }
});

test('secrets are random, prefixed, and stored as a hash that is not the secret', () => {
  const a = newSecret('cvt_');
  assert.match(a, /^cvt_[A-Za-z0-9_-]{43}$/);
  assert.notEqual(a, newSecret('cvt_'));
  assert.equal(hashSecret(a), hashSecret(a));
  assert.ok(!hashSecret(a).includes(a.slice(4)));
});
