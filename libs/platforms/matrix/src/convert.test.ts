import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasPendingImages, pendingImage } from '@conveyor/platform-kit';
import { chainToContent, editContent, isDirectRoom, MatrixMessageEvent, mentionsBot, messageToQuery, skipReason, stripReplyFallback, textContent, type MatrixRoomInfo } from './convert.js';
import { MatrixConfigSchema } from './config.js';
import { txnIdOf } from './connection.js';
import { SyncResponse } from './rest.js';

const self = { userId: '@conveyor:hs.test', displayName: 'Conveyor Bot' };
const event = (content: Record<string, unknown>, over: Record<string, unknown> = {}) => MatrixMessageEvent.parse({
  type: 'm.room.message', event_id: '$e1', sender: '@alice:hs.test', origin_server_ts: 1_700_000_000_000, content: { msgtype: 'm.text', ...content }, ...over,
});
const room = (members: string[], name = ''): MatrixRoomInfo => ({ roomId: '!r:hs.test', members: new Map(members.map((m) => [m, m === '@alice:hs.test' ? 'Alice' : ''])), name });

test('a room with the bot and one other member is a private chat; a third member makes it a group', () => {
  assert.equal(isDirectRoom(room([self.userId, '@alice:hs.test']), self), true);
  assert.equal(isDirectRoom(room(['@alice:hs.test']), self), true, 'the bot not listed yet');
  assert.equal(isDirectRoom(room([self.userId, '@alice:hs.test', '@bob:hs.test']), self), false);
});

test('a DM becomes a person query keyed by the room, deduplicated by the event id', () => {
  const q = messageToQuery(event({ body: 'hello' }), room([self.userId, '@alice:hs.test']), self, 'bot-1', false);
  assert.equal(q.launcherType, 'person');
  assert.equal(q.sessionId, '!r:hs.test');
  assert.equal(q.senderId, '@alice:hs.test');
  assert.equal(q.senderName, 'Alice');
  assert.equal(q.dedupId, '$e1');
  assert.equal(q.replyTo, '$e1');
  assert.equal(q.groupName, undefined);
  assert.deepEqual(q.messageChain, [{ type: 'Source', id: '$e1', timestamp: 1_700_000_000 }, { type: 'Plain', text: 'hello' }]);
});

test('mentions: m.mentions, the MXID or display name in the body, a matrix.to pill; the At goes first and the MXID is taken out', () => {
  const members = room([self.userId, '@alice:hs.test', '@bob:hs.test'], 'Lobby');
  const byIds = messageToQuery(event({ body: 'Conveyor: hi', 'm.mentions': { user_ids: [self.userId] } }), members, self, 'bot-1', true);
  assert.equal(byIds.launcherType, 'group');
  assert.equal(byIds.groupName, 'Lobby');
  assert.equal(byIds.stream, true);
  assert.deepEqual(byIds.messageChain[1], { type: 'At', target: 'bot-1', display: 'Conveyor Bot' });
  const byMxid = messageToQuery(event({ body: `${self.userId} what time is it` }), members, self, 'bot-1', false);
  assert.deepEqual(byMxid.messageChain.slice(1), [{ type: 'At', target: 'bot-1', display: 'Conveyor Bot' }, { type: 'Plain', text: 'what time is it' }]);
  assert.equal(mentionsBot(event({ body: 'hey conveyor bot' }), self), true, 'the display name, any case');
  assert.equal(mentionsBot(event({ body: 'Bot', formatted_body: `<a href="https://matrix.to/#/${self.userId}">Bot</a>` }), self), true);
  assert.equal(mentionsBot(event({ body: 'just chatting', 'm.mentions': { user_ids: ['@bob:hs.test'] } }), self), false);
  const plain = messageToQuery(event({ body: 'just chatting' }), members, self, 'bot-1', false);
  assert.ok(!plain.messageChain.some((c) => c.type === 'At'));
});

test('a reply\'s quoted fallback is dropped, and a mention inside the quote does not count', () => {
  const body = `> <@conveyor:hs.test> earlier answer\n> second line\n\nthanks`;
  assert.equal(stripReplyFallback(body), 'thanks');
  assert.equal(mentionsBot(event({ body }), self), false);
  assert.equal(stripReplyFallback('no quote'), 'no quote');
});

test('the bot\'s own events, edits and messages neither text nor image are skipped; text, notices and emotes are not', () => {
  assert.equal(skipReason(event({ body: 'x' }, { sender: self.userId }), self), 'own');
  assert.equal(skipReason(event({ body: '* x', 'm.relates_to': { rel_type: 'm.replace', event_id: '$old' } }), self), 'edit');
  assert.equal(skipReason(event({ msgtype: 'm.file', body: 'report.pdf' }), self), 'not text');
  for (const msgtype of ['m.text', 'm.notice', 'm.emote']) assert.equal(skipReason(event({ msgtype, body: 'x' }), self), undefined);
});

test('malformed events are refused with the field at fault', () => {
  const bad = (e: unknown) => {
    const r = MatrixMessageEvent.safeParse(e);
    return r.success ? 'ok' : r.error.issues[0]!.path.join('.');
  };
  const ok = { type: 'm.room.message', event_id: '$a', sender: '@a:hs', origin_server_ts: 1, content: { msgtype: 'm.text', body: 'x' } };
  assert.equal(bad(ok), 'ok');
  assert.equal(bad({ ...ok, sender: 'alice' }), 'sender');
  assert.equal(bad({ ...ok, event_id: 'no-dollar' }), 'event_id');
  assert.equal(bad({ ...ok, content: { msgtype: 'm.text' } }), 'content.body');
  assert.equal(bad({ ...ok, content: { msgtype: 'm.text', body: 'x'.repeat(70_000) } }), 'content.body');
});

test('outbound: At as the MXID listed in m.mentions, a reply relation, edits as m.replace with m.new_content', () => {
  const { body, mentions } = chainToContent([{ type: 'At', target: '@alice:hs.test', display: '' }, { type: 'Plain', text: ' done' }]);
  assert.equal(body, '@alice:hs.test done');
  assert.deepEqual(mentions, ['@alice:hs.test']);
  assert.equal(chainToContent([{ type: 'At', target: '@alice:hs.test', display: '' }, { type: 'Plain', text: 'Echo: hi' }]).body, '@alice:hs.test Echo: hi', 'text right after a user id is set apart from it');
  assert.equal(chainToContent([{ type: 'Plain', text: 'to ' }, { type: 'At', target: '@alice:hs.test', display: '' }]).body, 'to @alice:hs.test', 'no space after a closing mention');
  assert.deepEqual(textContent('hi', { replyTo: '$q', mentions }), { msgtype: 'm.text', body: 'hi', 'm.mentions': { user_ids: ['@alice:hs.test'] }, 'm.relates_to': { 'm.in_reply_to': { event_id: '$q' } } });
  assert.deepEqual(editContent('$first', 'whole text'), {
    msgtype: 'm.text', body: '* whole text', 'm.new_content': { msgtype: 'm.text', body: 'whole text', 'm.mentions': { user_ids: [] } }, 'm.mentions': {}, 'm.relates_to': { rel_type: 'm.replace', event_id: '$first' },
  });
});

test('transaction ids are stable per reply part and piece, distinct otherwise, and URL-safe', () => {
  assert.equal(txnIdOf('q1:1:0:0', 0), txnIdOf('q1:1:0:0', 0));
  assert.notEqual(txnIdOf('q1:1:0:0', 0), txnIdOf('q1:1:0:0', 1));
  assert.notEqual(txnIdOf('q1:1:0:0', 'first'), txnIdOf('q1:1:1:0', 'first'));
  assert.match(txnIdOf('x'), /^cv[A-Za-z0-9_-]{32}$/);
});

test('settings: LangBot\'s keys, the token a secret, the URL without its trailing slash, a bad user id refused', () => {
  const c = MatrixConfigSchema.parse({ homeserver_url: 'http://hs.test:8008/', user_id: '@bot:hs.test', access_token: 'syt_x', bridges: '' });
  assert.equal(c.homeserver_url, 'http://hs.test:8008');
  assert.equal(c['enable-stream-reply'], false);
  assert.throws(() => MatrixConfigSchema.parse({ user_id: 'bot', access_token: 't' }), /user_id/);
  assert.throws(() => MatrixConfigSchema.parse({ user_id: '@bot:hs' }), /access_token/);
});

test('a sync answer needs its next_batch; rooms and events may be absent', () => {
  assert.deepEqual(SyncResponse.parse({ next_batch: 's1' }).rooms, { join: {}, invite: {} });
  assert.equal(SyncResponse.safeParse({ rooms: {} }).success, false);
  const r = SyncResponse.parse({ next_batch: 's2', rooms: { join: { '!a:hs': { timeline: { events: [{ type: 'x' }] } } } } });
  assert.equal(r.rooms.join['!a:hs']!.timeline.events.length, 1);
  assert.deepEqual(r.rooms.join['!a:hs']!.state.events, []);
});

test('a sync position the homeserver refuses is lost (the next connection starts at now); other errors are not', async () => {
  const { isLostPosition } = await import('./connection.js');
  const { MatrixApiError } = await import('./rest.js');
  assert.equal(isLostPosition(new MatrixApiError(400, 'M_UNKNOWN_POS', 'x')), true);
  assert.equal(isLostPosition(new MatrixApiError(400, 'M_INVALID_PARAM', 'x')), true);
  assert.equal(isLostPosition(new MatrixApiError(401, 'M_UNKNOWN_TOKEN', 'x')), false);
  assert.equal(isLostPosition(new MatrixApiError(502, 'M_UNKNOWN', 'x')), false);
  assert.equal(isLostPosition(new Error('socket hang up')), false);
});

test('an m.image with mxc media is a query with the image pending by its URL, its body as text; without media it is skipped', () => {
  const image = event({ msgtype: 'm.image', body: 'cat.png', url: 'mxc://hs.test/abc' });
  assert.equal(skipReason(image, self), undefined);
  assert.equal(skipReason(event({ msgtype: 'm.image', body: 'x.png' }), self), 'image without media');
  assert.equal(skipReason(event({ msgtype: 'm.image', body: 'x.png', url: 'https://elsewhere/x.png' }), self), 'image without media');
  const q = messageToQuery(image, room([self.userId, '@alice:hs.test']), self, 'bot-1', false);
  assert.deepEqual(q.messageChain.slice(1), [pendingImage('mxc://hs.test/abc'), { type: 'Plain', text: 'cat.png' }]);
  assert.equal(hasPendingImages(messageToQuery(event({ body: 'text' }), room([self.userId]), self, 'bot-1', false).messageChain), false, 'a text message has no image');
});
