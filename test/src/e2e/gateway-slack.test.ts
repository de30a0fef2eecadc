import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { echoResponder, startFakeSlack, type FakeSlack } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';
import { sample } from '../harness/metrics.js';
import { waitUntil } from '../harness/wait.js';

const BOT_TOKEN = `xoxb-${uniqueName('socket-bot')}`;
const APP_TOKEN = `xapp-1-AFAKE-${uniqueName('socket-app')}`;
const SIGNING_SECRET = 'socket-mode-signing-secret';

/**
 * Slack Socket Mode through the gateway: the fake Slack's Socket Mode WebSocket → the gateway →
 * the pipeline → `chat.postMessage` at the fake's Web API.
 */
describe('Slack Socket Mode through the gateway', () => {
  let sys: TestSystem;
  let slack: FakeSlack;
  let bot: string;
  let seq = 0;
  const eventId = () => `Ev${Date.now()}${seq++}`;
  const dm = (id: string, channel: string, text: string) => ({
    token: 'legacy', team_id: 'T1', api_app_id: 'AFAKE', type: 'event_callback', event_id: id, event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ enterprise_id: null, team_id: 'T1', user_id: 'UBOT', is_bot: true }],
    event: { type: 'message', channel_type: 'im', channel, user: 'U42', ts: `${Math.floor(Date.now() / 1000)}.${String(seq).padStart(6, '0')}`, text },
  });
  const channel = () => `D${randomInt(1, 2 ** 40)}`;
  const gateway = () => sys.services.get('gateway');
  const posted = (ch: string) => slack.channel(ch).map((m) => m.text);

  before(async () => {
    sys = await startTestSystem();
    slack = await startFakeSlack({ token: BOT_TOKEN, appToken: APP_TOKEN });
    sys.llm.setDefault(echoResponder);
    bot = await addBot(sys, 'Slack (Socket Mode)', 'slack', { bot_token: BOT_TOKEN, signing_secret: SIGNING_SECRET, app_token: APP_TOKEN, api_base_url: slack.url });
    await sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: '3000' });
    await slack.waitForSocketMode((s) => s.open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await slack?.close();
  });

  test('an envelope is answered at chat.postMessage in its channel and acknowledged', async () => {
    const ch = channel();
    const envelopeId = slack.sendEnvelope(dm(eventId(), ch, 'hello over the socket'));
    await slack.waitFor(() => posted(ch).length >= 1, 60_000);
    assert.deepEqual(posted(ch), ['Echo: hello over the socket']);
    await slack.waitForSocketMode((s) => s.acks.includes(envelopeId), 30_000);
    assert.ok(slack.calls.some((c) => c.method === 'apps.connections.open' && c.token === APP_TOKEN));
    assert.ok(slack.calls.filter((c) => c.method === 'chat.postMessage').every((c) => c.token === BOT_TOKEN), 'replies go out with the bot token');
    assert.deepEqual(slack.socketMode.unexpected, []);
  });

  test('an event redelivered (retry_attempt 1) is acknowledged again and answered once', async () => {
    const ch = channel();
    const body = dm(eventId(), ch, 'only once please');
    const first = slack.sendEnvelope(body);
    await slack.waitForSocketMode((s) => s.acks.includes(first), 30_000);
    const again = slack.sendEnvelope(body, { retryAttempt: 1, retryReason: 'timeout' });
    await slack.waitForSocketMode((s) => s.acks.includes(again), 30_000);
    // A second answer would trail the first closely: one more round trip is the yardstick.
    slack.sendEnvelope(dm(eventId(), ch, 'and then this'));
    await slack.waitFor(() => posted(ch).includes('Echo: and then this'), 60_000);
    assert.deepEqual(posted(ch).filter((t) => t === 'Echo: only once please'), ['Echo: only once please']);
  });

  test('malformed frames and envelopes are logged and counted; the connection stays and goes on answering', async () => {
    const openedBefore = slack.socketMode.opened;
    slack.sendFrame('this is not json');
    const bad = slack.sendEnvelope({ type: 'event_callback', event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', text: 'no event id' } });
    const ch = channel();
    slack.sendEnvelope(dm(eventId(), ch, 'after the garbage'));
    await slack.waitFor(() => posted(ch).includes('Echo: after the garbage'), 60_000);
    await slack.waitForSocketMode((s) => s.acks.includes(bad), 30_000);
    await waitUntil('the malformed frames counted', async () => {
      const text = await (await fetch(`${gateway().healthUrl}/metrics`)).text();
      return (sample(text, 'conveyor_gateway_malformed_events_total', { adapter: 'slack' }) ?? 0) >= 2;
    }, 30_000, 250);
    const lines = gateway().logs.filter((l) => l.includes('malformed event from the platform connection'));
    assert.ok(lines.some((l) => l.includes('frame is not JSON') && l.includes(bot)), lines.join('\n'));
    assert.ok(lines.some((l) => l.includes('event_id') && l.includes(bad)), 'the missing field and the envelope are named');
    assert.equal(slack.socketMode.opened, openedBefore, 'bad input does not cost the connection');
  });

  test('a disconnect from Slack: the gateway opens a new connection and the next message is answered', async () => {
    const openedBefore = slack.socketMode.opened;
    const opensBefore = slack.calls.filter((c) => c.method === 'apps.connections.open').length;
    slack.sendDisconnect('refresh_requested', 30_000);
    await slack.waitForSocketMode((s) => s.opened > openedBefore && s.open === 1, 60_000);
    assert.ok(slack.calls.filter((c) => c.method === 'apps.connections.open').length > opensBefore, 'a fresh URL asked for');
    const ch = channel();
    const envelopeId = slack.sendEnvelope(dm(eventId(), ch, 'after the refresh'));
    await slack.waitFor(() => posted(ch).includes('Echo: after the refresh'), 60_000);
    await slack.waitForSocketMode((s) => s.acks.includes(envelopeId), 30_000);
    assert.equal(slack.socketMode.maxOpen, 1, 'the old connection was closed before the new one opened');
    assert.ok(gateway().logs.some((l) => l.includes('platform connection ended; reconnecting') && l.includes('refresh_requested') && l.includes(bot)), 'the reason is logged with the bot id');
  });

  test('a wrong app token: apps.connections.open is refused, logged with the bot id and retried with backoff; the other bot goes on', async () => {
    const wrongToken = `xapp-1-AFAKE-${uniqueName('wrong')}`;
    const wrong = await addBot(sys, 'Slack (wrong app token)', 'slack', { bot_token: BOT_TOKEN, signing_secret: SIGNING_SECRET, app_token: wrongToken, api_base_url: slack.url });
    const refused = () => gateway().logs.filter((l) => l.includes('platform connection failed') && l.includes(wrong));
    const started = Date.now();
    await waitUntil('three refused attempts logged', () => refused().length >= 3, 90_000, 250);
    // 1 s, 2 s, 4 s ... between attempts: three of them take seconds, not a tight loop.
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out');
    assert.ok(refused().every((l) => l.includes('invalid_auth')), refused().join('\n'));
    const ch = channel();
    slack.sendEnvelope(dm(eventId(), ch, 'still here'));
    await slack.waitFor(() => posted(ch).includes('Echo: still here'), 60_000);
    assert.ok(!gateway().logs.join('\n').includes(wrongToken), 'the wrong token is not logged either');
  });

  test('tokens and the socket URL never reach the logs', () => {
    const logs = gateway().logs.join('\n');
    for (const secret of [BOT_TOKEN, APP_TOKEN, SIGNING_SECRET, 'ticket=']) assert.ok(!logs.includes(secret), `${secret} is not logged`);
  });
});
