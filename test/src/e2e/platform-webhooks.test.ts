import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt, randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { sendLineWebhook, sendSlackEvent, startFakeLine, startFakeSlack, startFakeTelegram, type FakeLine, type FakeSlack, type FakeTelegram } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';

/**
 * Webhook platforms through all four services at `POST /bots/{bot_id}`: Slack's Events API against
 * the fake Web API (whole and streamed replies, signature, challenge, retries, bad input), LINE
 * against the fake Messaging API (reply token, push fallback, bad input), and a Telegram bot served
 * at the same path as its older `/telegram/{bot_id}`.
 */
describe('platform webhooks at /bots/{bot_id}', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let slack: FakeSlack;
  let tg: FakeTelegram;
  let line: FakeLine;
  const lineAccessToken = uniqueName('line-access-token');
  const lineSecret = uniqueName('line-channel-secret');
  const lineBotId = randomUUID();
  const slackToken = `xoxb-${uniqueName('token')}`;
  const signingSecret = uniqueName('signing-secret');
  const slackBotId = randomUUID();
  const streamingSlackBotId = randomUUID();
  const tgToken = `123456:${uniqueName('token')}`;
  const tgSecret = uniqueName('webhook-secret');
  const tgBotId = randomUUID();
  let ingress: string;

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const eventId = () => `Ev${randomInt(1, 2 ** 40)}`;
  const dm = (id: string, channel: string, text: string) => ({
    type: 'event_callback', event_id: id, team_id: 'T1', authorizations: [{ user_id: 'UBOT' }],
    event: { type: 'message', channel_type: 'im', channel, user: 'U42', ts: `${Date.now() / 1000}`, text },
  });

  before(async () => {
    sys = await startTestSystem();
    nc = await connect({ servers: NATS_URL });
    slack = await startFakeSlack({ token: slackToken });
    tg = await startFakeTelegram({ token: tgToken });
    line = await startFakeLine({ channelAccessToken: lineAccessToken });
    await addBot(sys, 'LINE bot', 'line', { channel_access_token: lineAccessToken, channel_secret: lineSecret, api_base_url: line.url }, lineBotId);
    await addBot(sys, 'Slack bot', 'slack', { bot_token: slackToken, signing_secret: signingSecret, api_base_url: slack.url }, slackBotId);
    await addBot(sys, 'Streaming Slack bot', 'slack', { bot_token: slackToken, signing_secret: signingSecret, api_base_url: slack.url, 'enable-stream-reply': true }, streamingSlackBotId);
    await addBot(sys, 'Telegram bot', 'telegram', { token: tgToken, webhook_secret: tgSecret, api_base_url: tg.url }, tgBotId);
    ingress = sys.services.get('ingress').url;
  });

  after(async () => {
    await nc?.close();
    await slack?.close();
    await tg?.close();
    await line?.close();
    await sys?.stop();
  });

  test('Slack: the url_verification challenge is echoed', async () => {
    const res = await sendSlackEvent(`${ingress}/bots/${slackBotId}`, signingSecret, { token: 'legacy', type: 'url_verification', challenge: 'chal-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'chal-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
  });

  test('Slack: a direct message is answered in its channel once, though Slack sends the event again', async () => {
    const answer = `Slack answer ${uniqueName('a')}`;
    sys.llm.setDefault({ text: answer });
    const channel = `D${randomInt(1, 2 ** 40)}`;
    const body = dm(eventId(), channel, 'hello there');
    const first = await sendSlackEvent(`${ingress}/bots/${slackBotId}`, signingSecret, body);
    assert.equal(first.status, 200);
    assert.deepEqual(await first.json(), { ok: true });
    // Slack's retry of the same event (it got no answer within 3 s): accepted, not answered again.
    const retry = await sendSlackEvent(`${ingress}/bots/${slackBotId}`, signingSecret, body);
    assert.equal(retry.status, 200);
    await slack.waitFor(() => slack.channel(channel).some((m) => m.text === answer), 30_000);
    // A later message of the same chat is answered too; by then the retry would have been.
    const next = `Second answer ${uniqueName('b')}`;
    sys.llm.setDefault({ text: next });
    assert.equal((await sendSlackEvent(`${ingress}/bots/${slackBotId}`, signingSecret, dm(eventId(), channel, 'and again'))).status, 200);
    await slack.waitFor(() => slack.channel(channel).some((m) => m.text === next), 30_000);
    assert.deepEqual(slack.channel(channel).map((m) => m.text), [answer, next], 'one post per message, the retried event answered once');
    assert.ok(slack.calls.every((c) => c.token === slackToken));
  });

  test('Slack: a mention in a channel is streamed into one message, updated until the whole answer shows', async () => {
    const answer = `Channel answer ${Array.from({ length: 18 }, (_, i) => `w${i}`).join(' ')}`;
    sys.llm.setDefault({ text: answer });
    const channel = `C${randomInt(1, 2 ** 40)}`;
    const res = await sendSlackEvent(`${ingress}/bots/${streamingSlackBotId}`, signingSecret, {
      type: 'event_callback', event_id: eventId(), authorizations: [{ user_id: 'UBOT' }],
      event: {
        type: 'app_mention', channel, user: 'U42', ts: '1700000000.000200', text: '<@UBOT> tell me',
        blocks: [{ type: 'rich_text', elements: [{ type: 'rich_text_section', elements: [{ type: 'user', user_id: 'UBOT' }, { type: 'text', text: ' tell me' }] }] }],
      },
    });
    assert.equal(res.status, 200);
    await slack.waitFor(() => slack.channel(channel).some((m) => m.text === answer), 30_000);
    const messages = slack.channel(channel);
    assert.equal(messages.length, 1, 'one message, updated in place');
    assert.ok(messages[0]!.updates >= 1, `posted, then updated (${messages[0]!.updates} updates)`);
  });

  test('Slack: a bad signature is 401, a stale timestamp is 401, a malformed event is 400; nothing is published', async () => {
    const before = await lastQuerySeq();
    const url = `${ingress}/bots/${slackBotId}`;
    const forged = await sendSlackEvent(url, 'not-the-secret', dm(eventId(), 'D1', 'forged'));
    assert.equal(forged.status, 401);
    assert.deepEqual(await forged.json(), { ok: false, error: 'invalid signature: signature_mismatch' });
    const stale = await sendSlackEvent(url, signingSecret, dm(eventId(), 'D1', 'replayed'), { timestamp: Math.floor(Date.now() / 1000) - 600 });
    assert.equal(stale.status, 401);
    assert.deepEqual(await stale.json(), { ok: false, error: 'invalid signature: expired' });
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(dm(eventId(), 'D1', 'x')) });
    assert.equal(unsigned.status, 401);
    const notJson = await sendSlackEvent(url, signingSecret, null, { rawBody: '{not json' });
    assert.equal(notJson.status, 400);
    const noEventId = await sendSlackEvent(url, signingSecret, { type: 'event_callback', event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', text: 'x' } });
    assert.equal(noEventId.status, 400);
    assert.match(((await noEventId.json()) as { error: string }).error, /event_id/);
    const badUser = await sendSlackEvent(url, signingSecret, { ...dm(eventId(), 'D1', 'x'), event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'u 1', text: 'x' } });
    assert.equal(badUser.status, 400);
    assert.match(((await badUser.json()) as { error: string }).error, /event\.user/);
    // The bot's own post comes back as an event: acknowledged, never a query.
    const own = await sendSlackEvent(url, signingSecret, { ...dm(eventId(), 'D1', 'x'), event: { type: 'message', channel_type: 'im', channel: 'D1', user: 'UBOT', text: 'my reply' } });
    assert.equal(own.status, 200);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
  });

  test('Telegram: a bot is served at /bots/{bot_id} as at /telegram/{bot_id}', async () => {
    const answer = `Telegram answer ${uniqueName('t')}`;
    sys.llm.setDefault({ text: answer });
    const chat = randomInt(1, 2 ** 31);
    const update = { update_id: randomInt(1, 2 ** 31), message: { message_id: 5, from: { id: 42, first_name: 'Ann' }, chat: { id: chat, type: 'private' }, date: 1, text: 'hi' } };
    const bad = await fetch(`${ingress}/bots/${tgBotId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'wrong' }, body: JSON.stringify(update) });
    assert.equal(bad.status, 401);
    const res = await fetch(`${ingress}/bots/${tgBotId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': tgSecret }, body: JSON.stringify(update) });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { ok: true });
    await tg.waitFor(() => tg.chat(chat).some((m) => m.text === answer), 30_000);
    // A Slack bot is not found at the Telegram path.
    const wrongPath = await fetch(`${ingress}/telegram/${slackBotId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': tgSecret }, body: JSON.stringify(update) });
    assert.equal(wrongPath.status, 404);
    assert.equal(tg.chat(chat).length, 1);
  });

  const lineText = (userId: string, text: string, replyToken?: string) => ({
    type: 'message', mode: 'active', timestamp: Date.now(), webhookEventId: `01${randomInt(1, 2 ** 40)}`, deliveryContext: { isRedelivery: false },
    ...(replyToken ? { replyToken } : {}),
    source: { type: 'user', userId }, message: { type: 'text', id: String(randomInt(1, 2 ** 40)), quoteToken: 'q', text },
  });
  const lineUser = () => `U${randomInt(1, 2 ** 40).toString(16).padStart(32, '0')}`;

  test('LINE: the webhook verification is 200; a text is answered with its reply token, once though LINE redelivers it', async () => {
    const url = `${ingress}/bots/${lineBotId}`;
    const verify = await sendLineWebhook(url, lineSecret, { destination: 'Ubot', events: [] });
    assert.equal(verify.status, 200);
    const answer = `LINE answer ${uniqueName('l')}`;
    sys.llm.setDefault({ text: answer });
    const user = lineUser();
    const event = lineText(user, 'hello', line.issueReplyToken(user));
    const res = await sendLineWebhook(url, lineSecret, { destination: 'Ubot', events: [event] });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { ok: true });
    const redelivered = await sendLineWebhook(url, lineSecret, { destination: 'Ubot', events: [{ ...event, deliveryContext: { isRedelivery: true } }] });
    assert.equal(redelivered.status, 200);
    await line.waitFor((d) => d.some((m) => m.to === user && m.text === answer), 30_000);
    // A later message of the chat is answered too; by then the redelivery would have been.
    const next = `LINE second ${uniqueName('l')}`;
    sys.llm.setDefault({ text: next });
    assert.equal((await sendLineWebhook(url, lineSecret, { events: [lineText(user, 'again', line.issueReplyToken(user))] })).status, 200);
    await line.waitFor((d) => d.some((m) => m.to === user && m.text === next), 30_000);
    assert.deepEqual(line.delivered.filter((m) => m.to === user).map((m) => [m.via, m.text]), [['reply', answer], ['reply', next]]);
  });

  test('LINE: a reply token LINE refuses falls back to a push to the chat', async () => {
    const answer = `LINE pushed ${uniqueName('p')}`;
    sys.llm.setDefault({ text: answer });
    const user = lineUser();
    // A token the fake never issued: LINE answers 400 Invalid reply token, as for an expired one.
    const res = await sendLineWebhook(`${ingress}/bots/${lineBotId}`, lineSecret, { events: [lineText(user, 'late', 'expired-reply-token')] });
    assert.equal(res.status, 200);
    const delivered = await line.waitFor((d) => d.some((m) => m.to === user), 30_000);
    const mine = delivered.filter((m) => m.to === user);
    assert.equal(mine.length, 1);
    assert.equal(mine[0]!.via, 'push');
    assert.equal(mine[0]!.text, answer);
    assert.match(mine[0]!.retryKey ?? '', /^[0-9a-f-]{36}$/);
  });

  test('LINE: a bad signature is 401, a malformed body is 400; nothing is published', async () => {
    const before = await lastQuerySeq();
    const url = `${ingress}/bots/${lineBotId}`;
    const user = lineUser();
    const forged = await sendLineWebhook(url, 'not-the-secret', { events: [lineText(user, 'forged', line.issueReplyToken(user))] });
    assert.equal(forged.status, 401);
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ events: [lineText(user, 'x')] }) });
    assert.equal(unsigned.status, 401);
    const notJson = await sendLineWebhook(url, lineSecret, null, { rawBody: '{"events": [' });
    assert.equal(notJson.status, 400);
    const noEvents = await sendLineWebhook(url, lineSecret, { destination: 'Ubot' });
    assert.equal(noEvents.status, 400);
    assert.match(((await noEvents.json()) as { error: string }).error, /events/);
    const badSource = await sendLineWebhook(url, lineSecret, { events: [{ ...lineText(user, 'x'), source: { type: 'user' } }] });
    assert.equal(badSource.status, 400);
    assert.match(((await badSource.json()) as { error: string }).error, /events\.0: source/);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
    assert.equal(line.delivered.filter((m) => m.to === user).length, 0);
  });
});
