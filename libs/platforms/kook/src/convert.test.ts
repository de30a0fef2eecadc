import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chainToKMarkdown, isMessageEvent, KookMessageEvent, messageToQuery } from './convert.js';
import { parseKookConfig } from './config.js';
import { KookApiError } from './rest.js';
import { resumeUrl } from './socket.js';

const BOT_USER = '900';
const BOT_ID = 'conveyor-bot';
const event = (over: Record<string, unknown>) => KookMessageEvent.parse({
  channel_type: 'GROUP', type: 9, target_id: 'ch-1', author_id: '42', content: 'hi', msg_id: 'msg-1', msg_timestamp: 1_700_000_000_000,
  extra: { channel_name: 'general', mention: [], author: { id: '42', username: 'alice', nickname: 'Alice' } },
  ...over,
});

test('a channel message is a group query of the channel, named after it; a mention of the bot is an At of the Conveyor bot', () => {
  const q = messageToQuery(event({ content: `(met)${BOT_USER}(met) hello (met)77(met) and (met)all(met)`, extra: { channel_name: 'general', mention: [BOT_USER, '77'], author: { nickname: 'Alice' } } }), BOT_USER, BOT_ID);
  assert.equal(q.sessionId, 'ch-1');
  assert.equal(q.launcherType, 'group');
  assert.equal(q.groupName, 'general');
  assert.equal(q.senderName, 'Alice');
  assert.equal(q.dedupId, 'msg-1');
  assert.equal(q.replyTo, 'msg-1');
  assert.deepEqual(q.messageChain.slice(1), [
    { type: 'At', target: BOT_ID, display: '' },
    { type: 'Plain', text: ' hello ' },
    { type: 'At', target: '77', display: '' },
    { type: 'Plain', text: ' and ' },
    { type: 'AtAll' },
  ]);
  assert.deepEqual(q.messageChain[0], { type: 'Source', id: 'msg-1', timestamp: 1_700_000_000 });
});

test('a direct message is a person query of the author; a text message mentioning the bot only in extra gets the At first', () => {
  const q = messageToQuery(event({ channel_type: 'PERSON', type: 1, target_id: BOT_USER, content: 'ping', extra: { mention: [BOT_USER], author: { username: 'bob' } } }), BOT_USER, BOT_ID);
  assert.equal(q.sessionId, '42');
  assert.equal(q.launcherType, 'person');
  assert.equal(q.groupName, undefined);
  assert.equal(q.senderName, 'bob');
  assert.deepEqual(q.messageChain.slice(1), [{ type: 'At', target: BOT_ID, display: '' }, { type: 'Plain', text: 'ping' }]);
});

test('an image message is an Image by URL; a channel with no name is named by its id', () => {
  const q = messageToQuery(event({ type: 2, content: 'https://img.kookapp.cn/a.png', extra: {} }), BOT_USER, BOT_ID);
  assert.deepEqual(q.messageChain[1], { type: 'Image', image_id: 'msg-1', url: 'https://img.kookapp.cn/a.png', path: '', base64: '' });
  assert.equal(q.groupName, '#ch-1');
  assert.equal(q.senderName, '42');
});

test('system events and broadcasts are no messages; a message without its ids does not parse', () => {
  assert.equal(isMessageEvent({ type: 255, channel_type: 'GROUP' }), false);
  assert.equal(isMessageEvent({ type: 9, channel_type: 'BROADCAST' }), false);
  assert.equal(isMessageEvent({ type: 9, channel_type: 'GROUP' }), true);
  assert.equal(isMessageEvent('nonsense'), false);
  assert.equal(KookMessageEvent.safeParse({ channel_type: 'GROUP', type: 9, content: 'x' }).success, false);
  assert.equal(KookMessageEvent.safeParse({ channel_type: 'ELSEWHERE', type: 9, target_id: 'a', author_id: 'b', msg_id: 'c' }).success, false);
});

test('a reply chain as KMarkdown: mentions as (met), images by URL, nothing for white space only', () => {
  assert.equal(chainToKMarkdown([{ type: 'At', target: '42', display: '' }, { type: 'Plain', text: ' **bold** answer' }, { type: 'AtAll' }]), '(met)42(met) **bold** answer(met)all(met)');
  assert.equal(chainToKMarkdown([{ type: 'Plain', text: 'see' }, { type: 'Image', image_id: 'i', url: 'https://x/y.png', path: '', base64: '' }]), 'see\nhttps://x/y.png\n');
  assert.equal(chainToKMarkdown([{ type: 'Plain', text: '  \n' }]), '');
});

test('config: the token is required and secret; the API base defaults to KOOK and loses its trailing slash', () => {
  assert.throws(() => parseKookConfig({}), /token: the bot token is required/);
  assert.equal(parseKookConfig({ token: 't' }).api_base_url, 'https://www.kookapp.cn/api/v3');
  assert.equal(parseKookConfig({ token: 't', api_base_url: 'http://127.0.0.1:9/api/v3/' }).api_base_url, 'http://127.0.0.1:9/api/v3');
  assert.throws(() => parseKookConfig({ token: 't', api_base_url: 'ftp://x' }), /api_base_url/);
});

test('the resume URL keeps the connection token and adds resume, sn and session_id', () => {
  const u = new URL(resumeUrl('wss://ws.kookapp.cn/gateway?compress=1&token=abc', { sessionId: 's-1', sn: 12 }));
  assert.equal(u.searchParams.get('token'), 'abc');
  assert.equal(u.searchParams.get('compress'), '1');
  assert.equal(u.searchParams.get('resume'), '1');
  assert.equal(u.searchParams.get('sn'), '12');
  assert.equal(u.searchParams.get('session_id'), 's-1');
});

test('KOOK refusals: an error code or a 4xx is permanent, a 429 or 5xx passes', () => {
  assert.equal(new KookApiError(200, 40000, 'x').permanent, true);
  assert.equal(new KookApiError(401, 401, 'x').permanent, true);
  assert.equal(new KookApiError(429, undefined, 'x').permanent, false);
  assert.equal(new KookApiError(502, undefined, 'x').permanent, false);
});
