import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { slackSignature, verifySlackRequest } from './verify.js';

const secret = '8f742231b10e8888abcd99yyyzzz85a5';
const body = Buffer.from('token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather');

test('the signature is v0= and the hex HMAC-SHA256 of "v0:ts:body"', () => {
  const expected = `v0=${createHmac('sha256', secret).update(`v0:1531420618:${body.toString()}`).digest('hex')}`;
  assert.equal(slackSignature(secret, '1531420618', body), expected);
});

test('a request is accepted only signed with the secret, over the exact body, within five minutes', () => {
  const now = new Date(1_700_000_000_000);
  const ts = String(now.getTime() / 1000);
  const sig = slackSignature(secret, ts, body);
  assert.deepEqual(verifySlackRequest(secret, sig, ts, body, now), { ok: true });
  assert.deepEqual(verifySlackRequest(secret, sig, ts, body, new Date(now.getTime() + 299_000)), { ok: true });
  assert.deepEqual(verifySlackRequest(secret, sig, ts, body, new Date(now.getTime() + 301_000)), { ok: false, reason: 'expired' });
  assert.deepEqual(verifySlackRequest(secret, sig, ts, body, new Date(now.getTime() - 301_000)), { ok: false, reason: 'expired' });
  assert.deepEqual(verifySlackRequest('other-secret', sig, ts, body, now), { ok: false, reason: 'signature_mismatch' });
  assert.deepEqual(verifySlackRequest(secret, sig, ts, Buffer.concat([body, Buffer.from(' ')]), now), { ok: false, reason: 'signature_mismatch' });
  assert.deepEqual(verifySlackRequest(secret, sig.slice(0, -1), ts, body, now), { ok: false, reason: 'signature_mismatch' });
  assert.deepEqual(verifySlackRequest(secret, undefined, ts, body, now), { ok: false, reason: 'missing_headers' });
  assert.deepEqual(verifySlackRequest(secret, sig, undefined, body, now), { ok: false, reason: 'missing_headers' });
  assert.deepEqual(verifySlackRequest(secret, sig, '1e9', body, now), { ok: false, reason: 'bad_timestamp' });
});
