import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLineBody } from './parse.js';

const BOT = 'bot-uuid';
const U = 'U4af4980629aaaaaaaaaaaaaaaaaaaaaa';
const G = 'Ca56f94637caaaaaaaaaaaaaaaaaaaaaa';
const text = (source: object, t: string, extra: object = {}) => ({
  type: 'message', webhookEventId: '01FZ74A0TDDPYRVKNK77XKC3ZR', replyToken: 'nHuyWiB7yP5Zw52FIkcQobQuGDXCTA', timestamp: 1, mode: 'active',
  source, message: { type: 'text', id: '444573844083572737', quoteToken: 'q', text: t, ...extra }, deliveryContext: { isRedelivery: false },
});

test('an empty events list (LINE\'s webhook verification) has no messages', () => {
  assert.deepEqual(parseLineBody({ destination: 'Uxxx', events: [] }, BOT), { ok: true, inbound: [] });
});

test('a user\'s text is a person chat keyed by the user, with the reply token', () => {
  const parsed = parseLineBody({ destination: 'Ubot', events: [text({ type: 'user', userId: U }, 'hello')] }, BOT);
  assert.deepEqual(parsed, {
    ok: true,
    inbound: [{ eventId: '01FZ74A0TDDPYRVKNK77XKC3ZR', replyToken: 'nHuyWiB7yP5Zw52FIkcQobQuGDXCTA', sessionId: U, launcherType: 'person', senderId: U, senderName: U, messageChain: [{ type: 'Plain', text: 'hello' }] }],
  });
});

test('a group text mentioning the bot is a group chat with an At of the bot and the mention taken out', () => {
  const parsed = parseLineBody({ events: [text({ type: 'group', groupId: G, userId: U }, '@Bot what now', { mention: { mentionees: [{ index: 0, length: 4, type: 'user', isSelf: true }] } })] }, BOT);
  assert.ok(parsed.ok);
  if (!parsed.ok) return;
  assert.equal(parsed.inbound[0]!.sessionId, G);
  assert.equal(parsed.inbound[0]!.launcherType, 'group');
  assert.deepEqual(parsed.inbound[0]!.messageChain, [{ type: 'At', target: BOT, display: '' }, { type: 'Plain', text: ' what now' }]);
});

test('other events and non-text messages are skipped; a text message event that does not parse is malformed, naming the field', () => {
  const skipped = parseLineBody({ events: [{ type: 'follow', source: { type: 'user', userId: U } }, { ...text({ type: 'user', userId: U }, ''), message: { type: 'sticker', id: '1' } }] }, BOT);
  assert.deepEqual(skipped, { ok: true, inbound: [] });
  for (const [body, field] of [
    [{}, /events/],
    [{ events: [{ ...text({ type: 'user', userId: U }, 'x'), webhookEventId: undefined }] }, /events\.0: webhookEventId/],
    [{ events: [text({ type: 'user', userId: 'not an id!' }, 'x')] }, /events\.0: source/],
    [{ events: [{ type: 'message' }] }, /events\.0: message/],
  ] as const) {
    const parsed = parseLineBody(body, BOT);
    assert.equal(parsed.ok, false, JSON.stringify(body));
    if (!parsed.ok) assert.match(parsed.error, field);
  }
});
