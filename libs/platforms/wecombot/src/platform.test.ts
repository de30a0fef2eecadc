import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WebhookOutcome, WebhookRequest } from '@conveyor/platform-kit';
import { decryptWecom, encryptWecom, sortedSha1 } from '@conveyor/wecom';
import { usesWebhook, WecomBotConfigSchema } from './config.js';
import { parseWecomBotCallback, streamIdOf } from './parse.js';
import { encryptedAnswer, wecomBotInbound } from './platform.js';

const KEY = 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C';
const config = WecomBotConfigSchema.parse({ Token: 'tok', EncodingAESKey: KEY, BotId: 'aib1', robot_name: 'Bot' });
function callback(message: object, receiver = ''): WebhookRequest {
  const enc = encryptWecom(KEY, JSON.stringify(message), receiver);
  return { botId: 'b1', subPath: '', method: 'POST', query: { timestamp: '1', nonce: '2', msg_signature: sortedSha1(['tok', '1', '2', enc]) }, headers: {}, rawBody: Buffer.from(JSON.stringify({ encrypt: enc })), now: new Date() };
}
const text = (extra: object = {}) => ({ msgid: 'm1', aibotid: 'aib1', chattype: 'single', from: { userid: 'u1' }, msgtype: 'text', text: { content: 'hi' }, ...extra });
const status = (o: WebhookOutcome) => (o.kind === 'answer' ? [o.answer.status, String(o.answer.body)] : [o.kind, '']);

test('a single-chat text is a person query replying into a stream, answered at once with the stream\'s start', () => {
  const o = wecomBotInbound.handle(callback(text()), config);
  assert.equal(o.kind, 'publish');
  if (o.kind !== 'publish') return;
  const streamId = streamIdOf('b1', 'm1');
  assert.deepEqual(o.queries, [{ sessionId: 'u1', launcherType: 'person', senderId: 'u1', senderName: 'u1', messageChain: [{ type: 'Plain', text: 'hi' }], replyTo: streamId, dedupId: 'm1', stream: true }]);
  const body = o.accepted?.body as { encrypt: string; msgsignature: string; timestamp: number; nonce: string };
  assert.equal(body.msgsignature, sortedSha1(['tok', String(body.timestamp), body.nonce, body.encrypt]));
  const plain = decryptWecom(KEY, body.encrypt, '');
  assert.deepEqual(plain.ok && JSON.parse(plain.message), { msgtype: 'stream', stream: { id: streamId, finish: false, content: '' } });
});

test('a group text mentioning the bot: a group query of the chat with an At of the bot, the mention out of the text', () => {
  const o = wecomBotInbound.handle(callback(text({ chattype: 'group', chatid: 'c9', text: { content: '@Bot hello' } })), config);
  assert.ok(o.kind === 'publish');
  if (o.kind !== 'publish') return;
  assert.equal(o.queries[0]?.sessionId, 'c9');
  assert.equal(o.queries[0]?.launcherType, 'group');
  assert.deepEqual(o.queries[0]?.messageChain, [{ type: 'At', target: 'b1', display: 'Bot' }, { type: 'Plain', text: 'hello' }]);
});

test('a stream refresh is a pull; other types are dropped; refusals come before parsing', () => {
  assert.equal(wecomBotInbound.handle(callback({ msgtype: 'stream', stream: { id: 's1' } }), config).kind, 'pull');
  assert.equal(wecomBotInbound.handle(callback(text({ msgtype: 'image' })), config).kind, 'drop');
  const ok = callback(text());
  assert.deepEqual(status(wecomBotInbound.handle({ ...ok, query: { ...ok.query, msg_signature: 'a'.repeat(40) } }, config)), [401, 'invalid signature']);
  assert.deepEqual(status(wecomBotInbound.handle({ ...ok, query: { timestamp: '1', nonce: '2' } }, config)), [401, 'invalid signature: missing msg_signature']);
  assert.equal(status(wecomBotInbound.handle(callback(text(), 'ww-x'), config))[0], 400);
  assert.deepEqual(status(wecomBotInbound.handle(callback(text({ aibotid: 'other' })), config)), [400, 'bad aibotid: the callback is for another bot']);
  assert.deepEqual(status(wecomBotInbound.handle({ ...ok, rawBody: Buffer.from('nope') }, config)), [400, 'malformed callback: not JSON']);
  assert.equal(status(wecomBotInbound.handle({ ...ok, method: 'PUT' }, config))[0], 405);
  // LangBot's configs carry the corp id: a callback encrypted for it is taken, and answered for it.
  const withCorp = WecomBotConfigSchema.parse({ ...config, Corpid: 'ww1' });
  const o = wecomBotInbound.handle(callback(text(), 'ww1'), withCorp);
  assert.ok(o.kind === 'publish');
  const enc = (o.kind === 'publish' ? (o.accepted?.body as { encrypt: string }).encrypt : '');
  assert.equal(decryptWecom(KEY, enc, 'ww1').ok, true);
  assert.equal(encryptedAnswer(config, '', {}).status, 200);
});

test('callback parsing names the field that is wrong', () => {
  assert.deepEqual(parseWecomBotCallback('x'), { ok: false, error: 'not JSON' });
  const r = parseWecomBotCallback(JSON.stringify(text({ chattype: 'group' })));
  assert.deepEqual(r, { ok: false, error: 'chatid: a group message names its chat' });
  assert.match((parseWecomBotCallback(JSON.stringify({ msgtype: 'stream' })) as { error: string }).error, /^stream/);
});

test('the mode: webhook when enable-webhook says so or, unset, when Token and EncodingAESKey are set; each mode asks for its own keys', () => {
  assert.equal(usesWebhook(config), true, 'a bot set up before the long connection existed stays in webhook mode');
  const longConnection = WecomBotConfigSchema.parse({ BotId: 'aib1', Secret: 's3cret' });
  assert.equal(usesWebhook(longConnection), false);
  assert.equal(longConnection.ws_url, 'wss://openws.work.weixin.qq.com');
  assert.equal(usesWebhook(WecomBotConfigSchema.parse({ ...config, 'enable-webhook': false, Secret: 's' })), false, 'enable-webhook decides when set');
  const problems = (input: object) => { const r = WecomBotConfigSchema.safeParse(input); return r.success ? [] : r.error.issues.map((i) => i.path.join('.')).sort(); };
  assert.deepEqual(problems({ BotId: 'aib1' }), ['Secret']);
  assert.deepEqual(problems({ 'enable-webhook': true, BotId: 'aib1' }), ['EncodingAESKey', 'Token']);
  assert.deepEqual(problems({ Secret: 's', ws_url: 'http://x' }), ['BotId', 'ws_url']);
});

test('a callback to a bot on the long connection is refused (403), nothing published', () => {
  const o = wecomBotInbound.handle(callback(text()), WecomBotConfigSchema.parse({ ...config, 'enable-webhook': false, Secret: 's' }));
  assert.deepEqual(status(o), [403, 'enable-webhook is off for this bot: its messages come over the long connection the gateway holds']);
});
