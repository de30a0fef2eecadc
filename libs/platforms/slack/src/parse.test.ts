import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSlackBody, slackText } from './parse.js';

const BOT = 'bot-uuid';
const callback = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'event_callback', event_id: 'Ev01', team_id: 'T1', authorizations: [{ user_id: 'UBOT' }], event, ...extra,
});
const rich = (...elements: unknown[]) => [{ type: 'rich_text', elements: [{ type: 'rich_text_section', elements }] }];

test('the url_verification challenge is handed back', () => {
  assert.deepEqual(parseSlackBody({ type: 'url_verification', token: 't', challenge: 'abc123' }, BOT), { kind: 'challenge', challenge: 'abc123' });
  assert.equal(parseSlackBody({ type: 'url_verification' }, BOT).kind, 'malformed');
});

test('a direct message is a person chat keyed by the im channel', () => {
  const parsed = parseSlackBody(callback({ type: 'message', channel_type: 'im', channel: 'D123', user: 'U42', ts: '1700000000.000100', text: 'hello' }), BOT);
  assert.deepEqual(parsed, {
    kind: 'message',
    inbound: { eventId: 'Ev01', sessionId: 'D123', launcherType: 'person', senderId: 'U42', senderName: 'U42', messageTs: '1700000000.000100', messageChain: [{ type: 'Plain', text: 'hello' }] },
  });
});

test('a mention is a group chat keyed by the channel, with an At of the bot and the mention left out of the text', () => {
  const parsed = parseSlackBody(callback({ type: 'app_mention', channel: 'C9', user: 'U42', ts: '1.2', text: '<@UBOT> what time is it', blocks: rich({ type: 'user', user_id: 'UBOT' }, { type: 'text', text: ' what time is it' }) }), BOT);
  assert.equal(parsed.kind, 'message');
  if (parsed.kind !== 'message') return;
  assert.equal(parsed.inbound.launcherType, 'group');
  assert.equal(parsed.inbound.sessionId, 'C9');
  assert.equal(parsed.inbound.groupName, 'C9');
  assert.deepEqual(parsed.inbound.messageChain, [{ type: 'At', target: BOT, display: '' }, { type: 'Plain', text: ' what time is it' }]);
});

test('the bot\'s own messages, other bots, edits, channel messages and other events are ignored', () => {
  const ignored = [
    callback({ type: 'message', channel_type: 'im', channel: 'D1', user: 'UBOT', text: 'my own reply' }),
    callback({ type: 'message', channel_type: 'im', channel: 'D1', user: 'U2', bot_id: 'B1', text: 'another bot' }),
    callback({ type: 'message', channel_type: 'im', channel: 'D1', subtype: 'bot_message', text: 'bot' }),
    callback({ type: 'message', channel_type: 'im', channel: 'D1', subtype: 'message_changed', message: {} }),
    callback({ type: 'message', channel_type: 'channel', channel: 'C1', user: 'U2', text: 'chatter' }),
    callback({ type: 'reaction_added', user: 'U2' }),
    callback({ type: 'message', channel_type: 'im', channel: 'D1', user: 'U2', text: '   ' }),
    { type: 'app_rate_limited', minute_rate_limited: 1 },
  ];
  for (const body of ignored) assert.equal(parseSlackBody(body, BOT).kind, 'ignored', JSON.stringify(body));
});

test('a body that is no Events API body is malformed, naming the field', () => {
  const cases: [unknown, RegExp][] = [
    [[1], /body/],
    [{ type: 'event_callback', event: { type: 'message' } }, /event_id/],
    [callback({ type: 'message', channel_type: 'im', channel: 'D1', user: 'not an id!', text: 'x' }), /event\.user/],
    [callback({ type: 'message', channel_type: 'im', user: 'U1', text: 'x' }), /event\.channel/],
  ];
  for (const [body, field] of cases) {
    const parsed = parseSlackBody(body, BOT);
    assert.equal(parsed.kind, 'malformed', JSON.stringify(body));
    if (parsed.kind === 'malformed') assert.match(parsed.error, field);
  }
});

test('text comes from the rich-text sections (text and links), else from text without mentions', () => {
  assert.equal(slackText({ blocks: rich({ type: 'text', text: 'see ' }, { type: 'link', url: 'https://x.test' }, { type: 'emoji', name: 'smile' }) }), 'see https://x.test');
  assert.equal(slackText({ text: '<@U1> hi <@U2>' }), ' hi ');
  assert.equal(slackText({ blocks: [null, 5, { type: 'section' }], text: 'plain' }), 'plain');
});
