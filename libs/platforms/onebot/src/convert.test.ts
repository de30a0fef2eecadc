import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chainToSegments, segmentsToChain } from './convert.js';
import { parseCqString } from './cq-code.js';
import { eventToQuery } from './connection.js';
import { parseFrame } from './parse.js';
import { oneBotUrl, parseOneBotConfig } from './config.js';

const ctx = { messageId: '77', time: 1_700_000_000, selfId: '10001', botAccountId: 'bot-uuid' };

test('inbound segments become LangBot components: text, at (the bot, someone, all), image by URL, voice, file', async () => {
  const chain = await segmentsToChain([
    { type: 'at', data: { qq: '10001' } },
    { type: 'text', data: { text: ' hello' } },
    { type: 'at', data: { qq: 'all' } },
    { type: 'at', data: { qq: 424242 } },
    { type: 'image', data: { file: 'abc.jpg', url: 'https://img.example/abc.jpg' } },
    { type: 'record', data: { file: 'v.amr', url: 'https://v.example/v.amr' } },
    { type: 'file', data: { file: 'a.pdf', file_id: 'f1', file_size: '12' } },
    { type: 'face', data: { id: '14' } },
    { type: 'poke', data: {} },
  ], ctx);
  assert.deepEqual(chain, [
    { type: 'Source', id: '77', timestamp: 1_700_000_000 },
    { type: 'At', target: 'bot-uuid', display: '' },
    { type: 'Plain', text: ' hello' },
    { type: 'AtAll' },
    { type: 'At', target: '424242', display: '' },
    { type: 'Image', image_id: 'abc.jpg', url: 'https://img.example/abc.jpg', path: '', base64: '' },
    { type: 'Voice', voice_id: 'v.amr', url: 'https://v.example/v.amr', path: '', base64: '', length: 0 },
    { type: 'File', id: 'f1', name: 'a.pdf', size: 12, url: '', path: '', base64: '' },
    { type: 'Unknown', text: '[表情14]' },
    { type: 'Unknown', text: '[poke]' },
  ]);
});

test('a reply segment becomes a Quote of the quoted message, read with get_msg; an unreadable one quotes nothing', async () => {
  const quoted = await segmentsToChain([{ type: 'reply', data: { id: '5' } }, { type: 'text', data: { text: 'and?' } }], {
    ...ctx,
    getMessage: async (id) => (id === '5' ? { senderId: '99', segments: [{ type: 'text', data: { text: 'earlier' } }] } : null),
  });
  assert.deepEqual(quoted[1], { type: 'Quote', id: '5', group_id: null, sender_id: '99', target_id: null, origin: [{ type: 'Plain', text: 'earlier' }] });
  const failing = await segmentsToChain([{ type: 'reply', data: { id: '6' } }], { ...ctx, getMessage: async () => { throw new Error('timeout'); } });
  assert.deepEqual(failing[1], { type: 'Quote', id: '6', group_id: null, sender_id: null, target_id: null, origin: [] });
});

test('a reply chain becomes OneBot segments: text, at, at all, quote, images by URL and base64 (LangBot base64:// form)', () => {
  assert.deepEqual(chainToSegments([
    { type: 'Source', id: 1, timestamp: 0 },
    { type: 'Quote', id: '77', group_id: null, sender_id: null, target_id: null, origin: [] },
    { type: 'At', target: '424242', display: '' },
    { type: 'AtAll' },
    { type: 'Plain', text: 'hi' },
    { type: 'Plain', text: '' },
    { type: 'Image', image_id: '', url: 'https://img.example/x.png', path: '', base64: '' },
    { type: 'Image', image_id: '', url: '', path: '', base64: 'data:image/png;base64,iVBORw0KGgo=' },
    { type: 'Image', image_id: '', url: '', path: '', base64: 'iVBORw0KGgo=' },
  ]), [
    { type: 'reply', data: { id: '77' } },
    { type: 'at', data: { qq: '424242' } },
    { type: 'at', data: { qq: 'all' } },
    { type: 'text', data: { text: 'hi' } },
    { type: 'image', data: { file: 'https://img.example/x.png' } },
    { type: 'image', data: { file: 'base64://iVBORw0KGgo=' } },
    { type: 'image', data: { file: 'base64://iVBORw0KGgo=' } },
  ]);
});

test('CQ-code strings (the string message format) parse into segments with their escapes undone', () => {
  assert.deepEqual(parseCqString('[CQ:at,qq=10001] a&#91;b&#93;&amp;[CQ:image,file=x.jpg,url=https://i/x?a=1&#44;2]!'), [
    { type: 'at', data: { qq: '10001' } },
    { type: 'text', data: { text: ' a[b]&' } },
    { type: 'image', data: { file: 'x.jpg', url: 'https://i/x?a=1,2' } },
    { type: 'text', data: { text: '!' } },
  ]);
});

test('a group message event becomes a group query keyed by the group, named by the card, de-duplicated by self and message id', async () => {
  const frame = parseFrame(JSON.stringify({
    post_type: 'message', message_type: 'group', sub_type: 'normal', time: 1_700_000_001, self_id: 10001, message_id: -2147000001,
    user_id: 555, group_id: 888, message: [{ type: 'text', data: { text: 'hey' } }], sender: { user_id: 555, nickname: 'nick', card: 'Card' },
  }));
  assert.equal(frame.kind, 'message');
  if (frame.kind !== 'message') return;
  const q = await eventToQuery(frame.event, 'bot-uuid');
  assert.deepEqual({ ...q, messageChain: undefined }, {
    sessionId: '888', launcherType: 'group', senderId: '555', senderName: 'Card', groupName: 'Group 888', messageChain: undefined,
    replyTo: '-2147000001', dedupId: '10001:-2147000001', stream: false,
  });
  const named = await eventToQuery(frame.event, 'bot-uuid', undefined, async (id) => (id === '888' ? 'Tea Room' : ''));
  assert.equal(named.groupName, 'Tea Room', 'the name get_group_info read');
  const unnamed = await eventToQuery(frame.event, 'bot-uuid', undefined, async () => { throw new Error('timeout'); });
  assert.equal(unnamed.groupName, 'Group 888', 'LangBot\'s placeholder when the lookup fails');
  const priv = parseFrame(JSON.stringify({ post_type: 'message', message_type: 'private', self_id: 10001, message_id: 3, user_id: 555, message: 'plain [CQ:face,id=1]', sender: { nickname: 'nick' } }));
  assert.equal(priv.kind, 'message');
  if (priv.kind !== 'message') return;
  const pq = await eventToQuery(priv.event, 'bot-uuid');
  assert.equal(pq.sessionId, '555');
  assert.equal(pq.launcherType, 'person');
  assert.equal(pq.senderName, 'nick');
  assert.deepEqual(pq.messageChain.slice(1), [{ type: 'Plain', text: 'plain ' }, { type: 'Unknown', text: '[表情1]' }]);
});

test('frames are classified without throwing: responses, meta events, other events, and malformed ones with the field named', () => {
  assert.equal(parseFrame('{"status":"ok","retcode":0,"data":{"message_id":1},"echo":"e1"}').kind, 'response');
  assert.deepEqual(parseFrame('{"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000}'), { kind: 'meta', type: 'heartbeat' });
  assert.deepEqual(parseFrame('{"post_type":"notice","notice_type":"group_increase"}'), { kind: 'ignored', postType: 'notice' });
  assert.deepEqual(parseFrame('not json'), { kind: 'malformed', reason: 'frame is not JSON' });
  assert.deepEqual(parseFrame('[1]'), { kind: 'malformed', reason: 'frame is not a JSON object' });
  const noUser = parseFrame('{"post_type":"message","message_type":"private","self_id":1,"message_id":2,"message":[]}');
  assert.equal(noUser.kind, 'malformed');
  assert.match(noUser.kind === 'malformed' ? noUser.reason : '', /user_id/);
  const noGroup = parseFrame('{"post_type":"message","message_type":"group","self_id":1,"message_id":2,"user_id":3,"message":[]}');
  assert.match(noGroup.kind === 'malformed' ? noGroup.reason : '', /group_id/);
});

test('bot settings take LangBot keys with defaults; an unknown mode is refused naming the field', () => {
  const c = parseOneBotConfig({ host: '10.0.0.5', port: '3001', 'access-token': 'tok' });
  assert.equal(oneBotUrl(c), 'ws://10.0.0.5:3001/');
  assert.equal(c['access-token'], 'tok');
  assert.equal(parseOneBotConfig({ mode: "reverse", host: "0.0.0.0", 'access-token': 'tok' }).mode, "reverse");
  assert.throws(() => parseOneBotConfig({ mode: "http" }), /mode/);
  assert.throws(() => parseOneBotConfig({ port: 70000 }), /port/);
});
