import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { lineSignature, verifyLineSignature } from './verify.js';

const secret = 'channel-secret';
const body = Buffer.from('{"destination":"U1","events":[]}');

test('the signature is the base64 HMAC-SHA256 of the exact body with the channel secret', () => {
  const sig = createHmac('sha256', secret).update(body).digest('base64');
  assert.equal(lineSignature(secret, body), sig);
  assert.equal(verifyLineSignature(secret, sig, body), true);
  assert.equal(verifyLineSignature('other', sig, body), false);
  assert.equal(verifyLineSignature(secret, sig, Buffer.from(`${body.toString()} `)), false);
  assert.equal(verifyLineSignature(secret, undefined, body), false);
  assert.equal(verifyLineSignature(secret, '', body), false);
});
