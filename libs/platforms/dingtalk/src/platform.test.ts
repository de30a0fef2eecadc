import { test } from 'node:test';
import assert from 'node:assert/strict';
import { holdsConnection, type WebhookRequest } from '@conveyor/platform-kit';
import { DingtalkConfigSchema } from './config.js';
import { dingtalkInbound, dingtalkPlatform } from './platform.js';
import { dingtalkSign } from './verify.js';

const BOT = '5b0c8f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f';
const SECRET = 'S3CRET-app';
const http = DingtalkConfigSchema.parse({ client_id: 'dingappkey', client_secret: SECRET, mode: 'http' });
const now = new Date('2026-12-01T10:00:00Z');
const message = { msgId: 'm1', msgtype: 'picture', conversationType: '1', conversationId: 'cid1', senderId: '$:u', senderStaffId: 'staff-u', content: { downloadCode: 'dc1' } };

function request(body: string, headers: Record<string, string> = {}): WebhookRequest {
  const ts = String(now.getTime());
  return { method: 'POST', query: {}, botId: BOT, subPath: '', headers: { timestamp: ts, sign: dingtalkSign(ts, SECRET), ...headers }, rawBody: Buffer.from(body), now };
}

test('a signed callback is published, its pictures as placeholders; a bad sign 401, no JSON 400, another method 405', () => {
  const ok = dingtalkInbound.handle(request(JSON.stringify(message)), http);
  assert.equal(ok.kind, 'publish');
  if (ok.kind === 'publish') assert.deepEqual(ok.queries[0]?.messageChain, [{ type: 'Plain', text: '[Image]' }]);
  const forged = dingtalkInbound.handle(request(JSON.stringify(message), { sign: dingtalkSign(String(now.getTime()), 'other') }), http);
  assert.deepEqual(forged, { kind: 'answer', answer: { status: 401, body: { errcode: 401, errmsg: 'invalid signature: sign does not match' } } });
  const notJson = dingtalkInbound.handle(request('{'), http);
  assert.equal(notJson.kind === 'answer' && notJson.answer.status, 400);
  const get = dingtalkInbound.handle({ ...request(''), method: 'GET' }, http);
  assert.equal(get.kind === 'answer' && get.answer.status, 405);
});

test('a Stream mode bot (the default) takes no callbacks and is held by the gateway; an HTTP mode bot is not', () => {
  const stream = DingtalkConfigSchema.parse({ client_id: 'dingappkey', client_secret: SECRET });
  assert.equal(stream.mode, 'stream');
  const refused = dingtalkInbound.handle(request(JSON.stringify(message)), stream);
  assert.equal(refused.kind === 'answer' && refused.answer.status, 403);
  assert.equal(holdsConnection(dingtalkPlatform, { client_id: 'a', client_secret: 'b' }), true);
  assert.equal(holdsConnection(dingtalkPlatform, { client_id: 'a', client_secret: 'b', mode: 'http' }), false);
});

test('a verified callback names its (timestamp, sign) pair to be taken once, held while the timestamp is in the window', () => {
  const ts = String(now.getTime());
  const outcome = dingtalkInbound.handle(request(JSON.stringify(message)), http);
  assert.ok(outcome.kind === 'publish' && outcome.once, 'the pair is claimed before publishing');
  assert.equal(outcome.once.id, `${ts}:${dingtalkSign(ts, SECRET)}`);
  // A timestamp of now is acceptable for another hour; a minute more for replicas' clocks.
  assert.equal(outcome.once.ttlMs, 3_600_000 + 60_000);
  assert.equal(outcome.once.replayed.status, 401);
  // A timestamp 59 minutes old has one minute of validity left.
  const old = String(now.getTime() - 59 * 60_000);
  const late = dingtalkInbound.handle(request(JSON.stringify(message), { timestamp: old, sign: dingtalkSign(old, SECRET) }), http);
  assert.equal(late.kind === 'publish' && late.once?.ttlMs, 60_000 + 60_000);
  // A message that makes no query still uses up its pair.
  const skipped = dingtalkInbound.handle(request(JSON.stringify({ ...message, msgtype: 'unknownType' })), http);
  if (skipped.kind === 'drop') assert.ok(skipped.once);
  // A refused request claims nothing.
  const forged = dingtalkInbound.handle(request(JSON.stringify(message), { sign: dingtalkSign(ts, 'other') }), http);
  assert.equal(forged.kind, 'answer');
});
