import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DingtalkConfigSchema } from './config.js';
import { imagePlaceholders, MAX_IMAGES_PER_MESSAGE } from '@conveyor/platform-kit';
import { dingtalkReplyTo, parseRobotMessage, resolvePictures, sessionWebhookOf } from './parse.js';

const BOT = '5b0c8f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f';
const config = DingtalkConfigSchema.parse({ client_id: 'dingappkey', client_secret: 'secret', robot_name: 'Conveyor' });
const WEBHOOK = 'https://oapi.dingtalk.com/robot/sendBySession?session=c5b1e7f0a9d4';

const base = {
  msgId: 'msgA1B2C3==',
  msgtype: 'text',
  conversationId: 'cidPrivate==',
  chatbotUserId: '$:LWCP_v1:$bot',
  chatbotCorpId: 'dingcorp',
  senderId: '$:LWCP_v1:$alice',
  senderStaffId: 'staff-alice',
  senderNick: 'Alice',
  sessionWebhook: WEBHOOK,
  sessionWebhookExpiredTime: 1_764_590_000_000,
  createAt: 1_764_584_000_000,
  robotCode: 'dingappkey',
};

test('a private text message is a person query of the sender\'s staff id, de-duplicated by msgId, the session webhook in replyTo', () => {
  const r = parseRobotMessage({ ...base, conversationType: '1', text: { content: 'hello' } }, config, BOT, false);
  assert.ok(r.ok && r.query);
  assert.deepEqual(r.query, {
    sessionId: 'staff-alice', launcherType: 'person', senderId: 'staff-alice', senderName: 'Alice',
    messageChain: [{ type: 'Plain', text: 'hello' }],
    replyTo: `1764590000000 ${WEBHOOK}`, dedupId: 'msgA1B2C3==', stream: false,
  });
  assert.deepEqual(sessionWebhookOf(r.query.replyTo), { url: WEBHOOK, expiresAt: 1_764_590_000_000 });
});

test('a group message that mentions the bot is a group query of the conversation with an At of the bot first, the @name taken out', () => {
  const r = parseRobotMessage({
    ...base, conversationType: '2', conversationId: 'cidGroup==', conversationTitle: 'Team',
    isInAtList: true, atUsers: [{ dingtalkId: '$:LWCP_v1:$bot' }], text: { content: '@Conveyor what is up' },
  }, config, BOT, true);
  assert.ok(r.ok && r.query);
  assert.equal(r.query.launcherType, 'group');
  assert.equal(r.query.sessionId, 'cidGroup==');
  assert.equal(r.query.senderId, 'staff-alice');
  assert.equal(r.query.groupName, 'Team');
  assert.equal(r.query.stream, true);
  assert.deepEqual(r.query.messageChain, [{ type: 'At', target: BOT, display: 'Conveyor' }, { type: 'Plain', text: 'what is up' }]);
});

test('an At of the bot by atUsers alone counts; a group message mentioning only someone else has none', () => {
  const byAtUsers = parseRobotMessage({ ...base, conversationType: '2', atUsers: [{ dingtalkId: '$:LWCP_v1:$bot' }], text: { content: 'hi' } }, config, BOT, false);
  assert.ok(byAtUsers.ok && byAtUsers.query);
  assert.equal(byAtUsers.query.messageChain[0]?.type, 'At');
  const other = parseRobotMessage({ ...base, conversationType: '2', isInAtList: false, atUsers: [{ dingtalkId: '$:LWCP_v1:$bob' }], text: { content: 'hi' } }, config, BOT, false);
  assert.ok(other.ok && other.query);
  assert.deepEqual(other.query.messageChain, [{ type: 'Plain', text: 'hi' }]);
});

test('rich text keeps its order with pictures as Images holding their download code; audio is its transcription; a file is a File', () => {
  const rich = parseRobotMessage({ ...base, conversationType: '1', msgtype: 'richText', content: { richText: [{ text: 'look' }, { type: 'picture', downloadCode: 'dc1' }, { text: 'there' }] } }, config, BOT, false);
  assert.ok(rich.ok && rich.query);
  assert.deepEqual(rich.query.messageChain.map((c) => (c.type === 'Plain' ? c.text : c.type)), ['look', 'Image', 'there']);
  assert.deepEqual(rich.query.messageChain[1], { type: 'Image', image_id: 'dc1', url: '', path: '', base64: '' });
  const audio = parseRobotMessage({ ...base, conversationType: '1', msgtype: 'audio', content: JSON.stringify({ downloadCode: 'dc2', recognition: '你好' }) }, config, BOT, false);
  assert.ok(audio.ok && audio.query);
  assert.deepEqual(audio.query.messageChain, [{ type: 'Plain', text: '你好' }]);
  const file = parseRobotMessage({ ...base, conversationType: '1', msgtype: 'file', content: { downloadCode: 'dc3', fileName: 'report.pdf' } }, config, BOT, false);
  assert.ok(file.ok && file.query);
  assert.equal(file.query.messageChain[0]?.type, 'File');
});

test('the bot\'s own message, an unknown type and an empty text are skipped; a missing field or a bad conversationType is malformed', () => {
  const own = parseRobotMessage({ ...base, conversationType: '1', senderId: '$:LWCP_v1:$bot', text: { content: 'x' } }, config, BOT, false);
  assert.ok(own.ok && own.query === null);
  const card = parseRobotMessage({ ...base, conversationType: '1', msgtype: 'interactiveCard' }, config, BOT, false);
  assert.ok(card.ok && card.query === null);
  const empty = parseRobotMessage({ ...base, conversationType: '1', text: { content: '  @Conveyor ' } }, config, BOT, false);
  assert.ok(empty.ok && empty.query === null);
  const noMsgId = parseRobotMessage({ ...base, msgId: undefined, conversationType: '1', text: { content: 'x' } }, config, BOT, false);
  assert.ok(!noMsgId.ok);
  assert.match(noMsgId.error, /msgId/);
  const badType = parseRobotMessage({ ...base, conversationType: '3', text: { content: 'x' } }, config, BOT, false);
  assert.ok(!badType.ok);
  assert.match(badType.error, /conversationType/);
  assert.ok(!parseRobotMessage('not an object', config, BOT, false).ok);
});

test('a webhook that does not fit the route, is no http(s) URL or not DingTalk\'s is left out of replyTo: the msgId stands instead', () => {
  const api = 'https://api.dingtalk.com';
  assert.equal(dingtalkReplyTo({ msgId: 'm1', sessionWebhook: `https://oapi.dingtalk.com/${'a'.repeat(200)}`, sessionWebhookExpiredTime: 1 }, api), 'm1');
  assert.equal(dingtalkReplyTo({ msgId: 'm1', sessionWebhook: 'javascript:alert(1)', sessionWebhookExpiredTime: 1 }, api), 'm1');
  assert.equal(dingtalkReplyTo({ msgId: 'm1', sessionWebhook: 'https://attacker.test/robot/sendBySession?session=x', sessionWebhookExpiredTime: 1 }, api), 'm1');
  assert.equal(dingtalkReplyTo({ msgId: 'm1', sessionWebhook: 'http://127.0.0.1:9/robot/sendBySession?session=x', sessionWebhookExpiredTime: 1 }, 'http://127.0.0.1:9/'), '1 http://127.0.0.1:9/robot/sendBySession?session=x');
  assert.equal(sessionWebhookOf('m1'), undefined);
});

test('pictures become [Image] when not downloaded; downloaded ones get their URL, at most four per message, a failed one a placeholder', async () => {
  const pics = Array.from({ length: 6 }, (_, i) => ({ type: 'Image' as const, image_id: `dc${i}`, url: '', path: '', base64: '' }));
  const chain = [{ type: 'Plain' as const, text: 'see' }, ...pics];
  assert.deepEqual(imagePlaceholders(chain).map((c) => (c.type === 'Plain' ? c.text : c.type)), ['see', ...Array(6).fill('[Image]')]);
  const failures: string[] = [];
  const resolved = await resolvePictures(chain, async (code) => {
    if (code === 'dc1') throw new Error('HTTP 403');
    return `https://files.test/${code}`;
  }, (reason) => failures.push(reason));
  assert.deepEqual(resolved.map((c) => (c.type === 'Plain' ? c.text : c.type === 'Image' ? c.url : c.type)), ['see', 'https://files.test/dc0', '[Image]', 'https://files.test/dc2', 'https://files.test/dc3', '[Image]', '[Image]']);
  assert.equal(MAX_IMAGES_PER_MESSAGE, 4);
  assert.deepEqual(failures, ['HTTP 403']);
});
