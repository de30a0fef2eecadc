import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WebhookRequest } from '@conveyor/platform-kit';
import { chainToQqText } from './adapter.js';
import { parseQqOfficialConfig } from './config.js';
import { dispatchToQuery, targetOf } from './parse.js';
import { qqOfficialInbound } from './platform.js';
import { keyPairOf, signHex } from './verify.js';
import { verify } from 'node:crypto';

const SECRET = 'qq-unit-secret-0123';
const BOT = '6f1f1c1e-0000-4000-8000-0000000000aa';
const config = parseQqOfficialConfig({ appid: '102000001', secret: SECRET });
const request = (payload: unknown, o: { secret?: string; timestamp?: string; headers?: Record<string, string> } = {}): WebhookRequest => {
  const rawBody = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  const timestamp = o.timestamp ?? '1733384468';
  return {
    method: 'POST', query: {}, botId: BOT, subPath: '', rawBody, now: new Date(),
    headers: o.headers ?? { 'x-signature-timestamp': timestamp, 'x-signature-ed25519': signHex(o.secret ?? SECRET, Buffer.concat([Buffer.from(timestamp), rawBody])), 'x-bot-appid': '102000001' },
  };
};
const groupAt = { op: 0, id: 'GROUP_AT_MESSAGE_CREATE:abc', s: 3, t: 'GROUP_AT_MESSAGE_CREATE', d: { id: 'ROBOT1.0_m1', content: ' hello bot', timestamp: '2026-12-02T10:00:00+08:00', group_openid: 'G0PEN', author: { member_openid: 'M0PEN' } } };

test('the URL validation (op 13) is answered with plain_token and the signature of event_ts + plain_token', () => {
  const out = qqOfficialInbound.handle(request({ op: 13, d: { plain_token: 'Arq0D5A61EgUu4OxUvOp', event_ts: '1725442341' } }), config);
  assert.equal(out.kind, 'answer');
  if (out.kind !== 'answer') return;
  const body = out.answer.body as { plain_token: string; signature: string };
  assert.equal(body.plain_token, 'Arq0D5A61EgUu4OxUvOp');
  assert.equal(verify(null, Buffer.from('1725442341Arq0D5A61EgUu4OxUvOp'), keyPairOf(SECRET).publicKey, Buffer.from(body.signature, 'hex')), true);
});

test('a bad or missing signature is 401 before anything is parsed', () => {
  for (const req of [request(groupAt, { secret: 'wrong' }), request(groupAt, { headers: {} }), request('not json', { secret: 'wrong' })]) {
    const out = qqOfficialInbound.handle(req, config);
    assert.equal(out.kind === 'answer' && out.answer.status, 401);
  }
  const tampered = request(groupAt);
  tampered.rawBody = Buffer.from(JSON.stringify({ ...groupAt, d: { ...groupAt.d, content: 'changed' } }));
  assert.equal(qqOfficialInbound.handle(tampered, config).kind, 'answer');
});

test('a signed group @ message is one group query of the group, an At of the bot first; acknowledged with op 12', () => {
  const out = qqOfficialInbound.handle(request(groupAt), config);
  assert.equal(out.kind, 'publish');
  if (out.kind !== 'publish') return;
  const [q] = out.queries;
  assert.equal(q.sessionId, 'group:G0PEN');
  assert.equal(q.launcherType, 'group');
  assert.equal(q.senderId, 'M0PEN');
  assert.equal(q.dedupId, 'ROBOT1.0_m1');
  assert.deepEqual(q.messageChain.slice(1), [{ type: 'At', target: BOT, display: '' }, { type: 'Plain', text: 'hello bot' }]);
  assert.deepEqual(qqOfficialInbound.answers.accepted.body, { op: 12 });
});

test('signed bad input: not JSON and a message without its ids are 400; other events are dropped; a WebSocket bot refuses the webhook', () => {
  assert.equal((qqOfficialInbound.handle(request('{not json'), config) as { answer: { status: number } }).answer.status, 400);
  const noIds = qqOfficialInbound.handle(request({ op: 0, t: 'C2C_MESSAGE_CREATE', d: { content: 'x' } }), config);
  assert.equal(noIds.kind === 'answer' && noIds.answer.status, 400);
  assert.match(JSON.stringify(noIds), /C2C_MESSAGE_CREATE: id/);
  assert.equal(qqOfficialInbound.handle(request({ op: 0, t: 'GUILD_MEMBER_ADD', d: {} }), config).kind, 'drop');
  const ws = parseQqOfficialConfig({ appid: '102000001', secret: SECRET, 'enable-webhook': false });
  const refused = qqOfficialInbound.handle(request(groupAt), ws);
  assert.equal(refused.kind === 'answer' && refused.answer.status, 403);
});

test('C2C, channel @ and guild DMs become queries routed by kind; a channel mention of the bot is its At', () => {
  const c2c = dispatchToQuery('C2C_MESSAGE_CREATE', { id: 'm2', content: 'hi', author: { user_openid: 'U0PEN' } }, BOT);
  assert.equal(c2c.kind === 'query' && c2c.query.sessionId, 'c2c:U0PEN');
  assert.equal(c2c.kind === 'query' && c2c.query.launcherType, 'person');
  const at = dispatchToQuery('AT_MESSAGE_CREATE', { id: 'm3', channel_id: 'C1', guild_id: 'G1', content: '<@!77> hi <@!88>', author: { id: '5', username: 'alice' }, mentions: [{ id: '77', username: 'bot', bot: true }, { id: '88', username: 'bob' }] }, BOT);
  assert.equal(at.kind, 'query');
  if (at.kind !== 'query') return;
  assert.equal(at.query.sessionId, 'channel:C1');
  assert.deepEqual(at.query.messageChain.slice(1), [{ type: 'At', target: BOT, display: '' }, { type: 'Plain', text: 'hi ' }, { type: 'At', target: '88', display: 'bob' }]);
  const dm = dispatchToQuery('DIRECT_MESSAGE_CREATE', { id: 'm4', channel_id: 'C2', guild_id: 'DMG', content: 'psst', author: { id: '5', username: 'alice' } }, BOT);
  assert.equal(dm.kind === 'query' && dm.query.sessionId, 'dm:DMG');
  assert.equal(dispatchToQuery('AT_MESSAGE_CREATE', { id: 'm5', channel_id: 'C1', guild_id: 'G1', content: 'x', author: { id: '6', bot: true } }, BOT).kind, 'skip');
  assert.deepEqual(targetOf('group:G0PEN'), { kind: 'group', id: 'G0PEN' });
  assert.equal(targetOf('elsewhere:1'), undefined);
});

test('reply text: groups and private chats plain, mentions only in guilds, no media links', () => {
  const chain = [{ type: 'At' as const, target: 'M0PEN', display: '' }, { type: 'Plain' as const, text: ' the answer' }, { type: 'Image' as const, image_id: 'i', url: 'https://x/y.png', path: '', base64: '' }];
  assert.equal(chainToQqText(chain, 'group'), 'the answer');
  assert.equal(chainToQqText(chain, 'channel'), '<@M0PEN> the answer');
});

test('config: appid digits and secret required; webhook on by default; LangBot\'s token optional', () => {
  assert.throws(() => parseQqOfficialConfig({ secret: 's' }), /appid/);
  assert.throws(() => parseQqOfficialConfig({ appid: '1' }), /secret/);
  const c = parseQqOfficialConfig({ appid: '1', secret: 's', 'enable-webhook': 'false' });
  assert.equal(c['enable-webhook'], false);
  assert.equal(c.token, '');
  assert.equal(c.auth_url, 'https://bots.qq.com/app/getAppAccessToken');
});
