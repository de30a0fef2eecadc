import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InboundQuery } from '@conveyor/platform-kit';
import { SlackConfigSchema } from './config.js';
import { slackQuery, parseSlackBody } from './parse.js';
import { inSocketMode, socketModeInbound } from './connection.js';
import type { SlackEnvelope } from './socket-mode.js';

const BOT = 'bot-uuid';
const config = SlackConfigSchema.parse({ bot_token: 'xoxb-1', signing_secret: 'shh', app_token: 'xapp-1-A1-1-abc' });
const body = (eventId: string, text = 'hello') => ({
  type: 'event_callback', event_id: eventId, authorizations: [{ user_id: 'UBOT' }],
  event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', ts: '1.5', text },
});
const envelope = (id: string, payload: unknown, type = 'events_api'): SlackEnvelope => ({ envelope_id: id, type, payload, accepts_response_payload: false });

/** The gateway's side as callbacks that record what happened, in order. */
function harness(publish: (q: InboundQuery) => Promise<void> = async () => {}) {
  const events: string[] = [];
  const published: InboundQuery[] = [];
  const malformed: { reason: string; detail?: object }[] = [];
  const logs: string[] = [];
  let socketOpen = true;
  const onEnvelope = socketModeInbound({
    botId: BOT,
    config,
    logger: { info: (_o, msg) => logs.push(msg), warn: (_o, msg) => logs.push(msg) },
    publish: async (q) => {
      events.push(`publish ${q.dedupId}`);
      await publish(q);
      published.push(q);
    },
    malformed: (reason, detail) => void malformed.push({ reason, ...(detail ? { detail } : {}) }),
    ack: (id) => {
      if (!socketOpen) return false;
      events.push(`ack ${id}`);
      return true;
    },
  });
  return { onEnvelope, events, published, malformed, logs, closeSocket: () => (socketOpen = false) };
}

const settled = async (done: () => boolean) => {
  for (let i = 0; i < 1_000 && !done(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(done(), 'settled');
};

test('a bot with an app-level token is held in Socket Mode; without one it stays on the webhook', () => {
  assert.equal(inSocketMode(config), true);
  assert.equal(inSocketMode(SlackConfigSchema.parse({ bot_token: 'xoxb-1', signing_secret: 'shh' })), false);
  assert.equal(inSocketMode(SlackConfigSchema.parse({ bot_token: 'xoxb-1', signing_secret: 'shh', app_token: '' })), false);
  const bad = SlackConfigSchema.safeParse({ bot_token: 'xoxb-1', signing_secret: 'shh', app_token: 'xoxb-not-an-app-token' });
  assert.equal(bad.success, false);
});

test('a message envelope is published as the webhook would publish it, and acknowledged only after that', async () => {
  const h = harness();
  h.onEnvelope(envelope('env-1', body('Ev1')));
  await settled(() => h.events.length === 2);
  assert.deepEqual(h.events, ['publish Ev1', 'ack env-1']);
  const webhook = parseSlackBody(body('Ev1'), BOT);
  assert.equal(webhook.kind, 'message');
  if (webhook.kind === 'message') assert.deepEqual(h.published[0], slackQuery(webhook.inbound, false));
  assert.equal(h.published[0]!.dedupId, 'Ev1', 'de-duplicated by the event id, as the webhook is');
});

test('a publish that fails leaves the envelope unacknowledged (Slack redelivers it); the next one goes on', async () => {
  let fail = true;
  const h = harness(async () => {
    if (fail) {
      fail = false;
      throw Object.assign(new Error('no stream'), { code: '503' });
    }
  });
  h.onEnvelope(envelope('env-1', body('Ev1')));
  h.onEnvelope(envelope('env-2', body('Ev2')));
  await settled(() => h.events.includes('ack env-2'));
  assert.deepEqual(h.events, ['publish Ev1', 'publish Ev2', 'ack env-2']);
  assert.ok(h.logs.some((l) => l.includes('left unacknowledged')));
});

test('messages are published one after another in arrival order', async () => {
  const releases: (() => void)[] = [];
  const h = harness((q) => (q.dedupId === 'Ev1' ? new Promise((r) => releases.push(r)) : Promise.resolve()));
  h.onEnvelope(envelope('env-1', body('Ev1', 'first')));
  h.onEnvelope(envelope('env-2', body('Ev2', 'second')));
  await settled(() => releases.length === 1);
  assert.deepEqual(h.events, ['publish Ev1'], 'the second waits for the first');
  releases[0]!();
  await settled(() => h.events.length === 4);
  assert.deepEqual(h.events, ['publish Ev1', 'ack env-1', 'publish Ev2', 'ack env-2']);
});

test('a malformed payload is reported as malformed and acknowledged; nothing is published', async () => {
  const h = harness();
  h.onEnvelope(envelope('env-bad', { type: 'event_callback', event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', text: 'x' } }));
  h.onEnvelope(envelope('env-user', { ...body('Ev3'), event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'not an id', text: 'x' } }));
  await settled(() => h.events.length === 2);
  assert.deepEqual(h.events, ['ack env-bad', 'ack env-user']);
  assert.equal(h.published.length, 0);
  assert.equal(h.malformed.length, 2);
  assert.match(h.malformed[0]!.reason, /event_id/);
  assert.deepEqual(h.malformed[0]!.detail, { envelopeId: 'env-bad' });
  assert.match(h.malformed[1]!.reason, /event\.user/);
});

test('events that ask for no answer and envelope types not served are acknowledged at once, nothing published', async () => {
  const h = harness();
  h.onEnvelope(envelope('env-own', { ...body('Ev4'), event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'UBOT', text: 'my reply' } }));
  h.onEnvelope(envelope('env-reaction', { type: 'event_callback', event_id: 'Ev5', event: { type: 'reaction_added', user: 'U1' } }));
  h.onEnvelope(envelope('env-cmd', { command: '/weather', text: 'x' }, 'slash_commands'));
  assert.deepEqual(h.events, ['ack env-own', 'ack env-reaction', 'ack env-cmd']);
  assert.equal(h.published.length, 0);
  assert.equal(h.malformed.length, 0);
});

test('an acknowledgement after the socket is gone is logged, not thrown; the message stays published', async () => {
  const h = harness();
  h.closeSocket();
  h.onEnvelope(envelope('env-late', body('Ev6')));
  await settled(() => h.published.length === 1 && h.logs.some((l) => l.includes('not acknowledged')));
  assert.deepEqual(h.events, ['publish Ev6']);
});
