import { test } from 'node:test';
import assert from 'node:assert/strict';
import { slackSignature } from './verify.js';
import { slackInbound, slackPlatform } from './platform.js';

const config = slackPlatform.botConfigSchema.parse({ bot_token: 'xoxb-1', signing_secret: 'shh' });
const now = new Date();
const ts = String(Math.floor(now.getTime() / 1000));
const request = (body: string, sign = 'shh') => ({
  botId: 'bot-1', subPath: '', method: 'POST', query: {}, now, rawBody: Buffer.from(body),
  headers: { 'x-slack-signature': slackSignature(sign, ts, Buffer.from(body)), 'x-slack-request-timestamp': ts },
});
const handle = (body: string, sign?: string) => slackInbound.handle(request(body, sign), config);

test('a bad signature is 401 before the body is read; a body that does not parse is 400', () => {
  const bad = handle('{"type":"url_verification","challenge":"c"}', 'wrong');
  assert.equal(bad.kind, 'answer');
  if (bad.kind === 'answer') assert.equal(bad.answer.status, 401);
  const junk = handle('{nope');
  assert.equal(junk.kind, 'answer');
  if (junk.kind === 'answer') assert.deepEqual(junk.answer, { status: 400, body: { ok: false, error: 'malformed event: the body is not valid JSON' } });
});

test('the challenge is answered as text; a message becomes one query de-duplicated by its event id', () => {
  assert.deepEqual(handle('{"type":"url_verification","challenge":"c-123"}'), { kind: 'answer', answer: { status: 200, body: 'c-123', type: 'text' } });
  const out = handle(JSON.stringify({ type: 'event_callback', event_id: 'Ev9', event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', ts: '5.6', text: 'hi' } }));
  assert.equal(out.kind, 'publish');
  if (out.kind !== 'publish') return;
  assert.equal(out.queries.length, 1);
  assert.equal(out.queries[0]!.dedupId, 'Ev9');
  assert.equal(out.queries[0]!.replyTo, '5.6');
  assert.equal(out.queries[0]!.stream, false);
});

test('a bot needs its token and signing secret', () => {
  const r = slackPlatform.botConfigSchema.safeParse({ bot_token: 'x' });
  assert.equal(r.success, false);
  if (!r.success) assert.deepEqual(r.error.issues.map((i) => i.path.join('.')), ['signing_secret']);
});

test('a bot in Socket Mode is held by the gateway, and its webhook still checks signatures if called', () => {
  const socket = slackPlatform.botConfigSchema.parse({ bot_token: 'xoxb-1', signing_secret: 'shh', app_token: 'xapp-1-A1-1-abc' });
  assert.equal(slackPlatform.connection?.holds?.(socket), true);
  assert.equal(slackPlatform.connection?.holds?.(config), false, 'without an app token the webhook serves the bot');
  const body = '{"type":"url_verification","challenge":"c"}';
  const forged = slackInbound.handle(request(body, 'wrong'), socket);
  assert.equal(forged.kind, 'answer');
  if (forged.kind === 'answer') assert.equal(forged.answer.status, 401);
  assert.equal(slackInbound.handle(request(body), socket).kind, 'answer');
});
