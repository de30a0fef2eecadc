import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { dingtalkSign, verifyDingtalkSignature } from './verify.js';

const SECRET = 'dt-app-secret-0123456789';
const now = new Date('2026-12-01T10:00:00Z');

test('the sign is base64 HMAC-SHA256 of "timestamp\\nsecret" keyed with the app secret', () => {
  const ts = String(now.getTime());
  assert.equal(dingtalkSign(ts, SECRET), createHmac('sha256', SECRET).update(`${ts}\n${SECRET}`).digest('base64'));
});

test('a good sign within the hour passes', () => {
  const ts = String(now.getTime() - 59 * 60_000);
  assert.deepEqual(verifyDingtalkSignature(SECRET, ts, dingtalkSign(ts, SECRET), now), { ok: true });
});

test('a sign made with another secret, a changed timestamp or a missing header is refused', () => {
  const ts = String(now.getTime());
  assert.deepEqual(verifyDingtalkSignature(SECRET, ts, dingtalkSign(ts, 'another-secret'), now), { ok: false, reason: 'sign does not match' });
  assert.deepEqual(verifyDingtalkSignature(SECRET, String(now.getTime() - 1), dingtalkSign(ts, SECRET), now), { ok: false, reason: 'sign does not match' });
  assert.equal(verifyDingtalkSignature(SECRET, ts, undefined, now).ok, false);
  assert.equal(verifyDingtalkSignature(SECRET, undefined, 'x', now).ok, false);
  assert.equal(verifyDingtalkSignature(SECRET, 'soon', dingtalkSign('soon', SECRET), now).ok, false);
});

test('a stale or future timestamp more than an hour off is refused, though signed right', () => {
  for (const ts of [String(now.getTime() - 61 * 60_000), String(now.getTime() + 61 * 60_000)]) {
    assert.deepEqual(verifyDingtalkSignature(SECRET, ts, dingtalkSign(ts, SECRET), now), { ok: false, reason: 'timestamp is more than an hour off' });
  }
});
