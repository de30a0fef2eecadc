import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { sign } from '@conveyor/http-bot';
import { addTelegramBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { EventPublisher, route } from '../harness/events.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/index.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

/** HTTP-bot sync/reset/errors, Telegram against the fake Bot API, and the web chat in Chromium, on one whole system. */
describe('platforms end to end', () => {
  let sys: TestSystem;
  let tg: FakeTelegram;
  let events: EventPublisher;
  const tgBotId = randomUUID();
  const tgToken = `123456:${uniqueName('token')}`;
  const tgSecret = uniqueName('webhook-secret');
  const webChatToken = uniqueName('webchat-token-');

  before(async () => {
    // Debug level: request lines, whose headers carry credentials, are logged too.
    sys = await startTestSystem({ serviceEnv: { LOG_LEVEL: 'debug', WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken } });
    tg = await startFakeTelegram({ token: tgToken });
    events = await EventPublisher.connect(sys.topology);
    await addTelegramBot(sys, 'Telegram bot', { token: tgToken, webhook_secret: tgSecret, api_base_url: tg.url, bot_username: 'conveyor_bot', 'enable-stream-reply': true }, tgBotId);
  });

  after(async () => {
    await events?.close();
    await tg?.close();
    await sys?.stop();
  });

  test('sync mode holds the call until the final reply, which does not go to the callback', async () => {
    sys.llm.setDefault({ text: 'Synchronous answer' });
    const session = `sync-${randomUUID()}`;
    const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text: 'hi' }] }, { subPath: 'sync' });
    assert.equal(res.status, 200);
    const body = (await res.json()) as any;
    assert.equal(body.code, 0);
    assert.equal(body.msg, 'ok');
    assert.equal(body.data.session_id, session);
    assert.match(body.data.reply_to, /^in_[0-9a-f]{32}$/);
    assert.equal(body.data.message.at(-1).text, 'Synchronous answer');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sys.callbacks.received.filter((c) => c.json?.session_id === session).length, 0, 'diverted, not called back');
  });

  test('a second /sync for a waiting session gets 409', async () => {
    sys.llm.setDefault({ text: 'slow', delayFirstTokenMs: 1500 } as any);
    const session = `sync2-${randomUUID()}`;
    const first = sys.post({ session_id: session, message: [{ type: 'Plain', text: 'one' }] }, { subPath: 'sync' });
    await new Promise((r) => setTimeout(r, 300));
    const second = await sys.post({ session_id: session, message: [{ type: 'Plain', text: 'two' }] }, { subPath: 'sync' });
    assert.equal(second.status, 409);
    assert.deepEqual(await second.json(), { code: 40901, msg: 'a sync request is already in flight for this session', data: null });
    assert.equal((await first).status, 200);
  });

  test('reset answers 200 with the protocol body', async () => {
    const res = await sys.post({ session_id: 'ticket-reset' }, { subPath: 'reset' });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { code: 0, msg: 'reset', data: { session_id: 'ticket-reset', removed: false } });
  });

  test('every signature and body error has its status and body', async () => {
    const ok = { session_id: 's', message: [{ type: 'Plain', text: 'x' }] };
    const cases: [string, Promise<Response>, number, unknown][] = [
      ['bad signature', sys.post(ok, { secret: 'nope' }), 401, { code: 40101, msg: 'invalid signature: signature_mismatch', data: null }],
      ['missing headers', sys.post(ok, { headers: { 'x-lb-signature': '' } }), 401, { code: 40101, msg: 'invalid signature: missing_headers', data: null }],
      ['bad timestamp', sys.post(ok, { headers: { 'x-lb-timestamp': 'abc' } }), 401, { code: 40101, msg: 'invalid signature: bad_timestamp', data: null }],
      ['expired', sys.post(ok, { headers: { 'x-lb-timestamp': '1000' } }), 401, { code: 40101, msg: 'invalid signature: expired', data: null }],
      ['not JSON', sys.post(null, { rawBody: '{nope' }), 400, { code: 40001, msg: 'body is not valid JSON', data: null }],
      ['not an object', sys.post(null, { rawBody: '[1]' }), 400, { code: 40001, msg: 'body must be a JSON object', data: null }],
      ['missing fields', sys.post({ session_id: 's' }), 400, { code: 40001, msg: 'session_id and message are required', data: null }],
      ['reset without session', sys.post({}, { subPath: 'reset' }), 400, { code: 40001, msg: 'session_id is required', data: null }],
      ['unknown sub-path', sys.post(ok, { subPath: 'nope' }), 400, { code: 40001, msg: 'unknown sub-path: nope', data: null }],
      ['too large', sys.post(null, { rawBody: Buffer.alloc(1_048_577, 32) }), 413, { code: 41301, msg: 'message too large', data: null }],
    ];
    for (const [name, p, status, body] of cases) {
      const res = await p;
      assert.equal(res.status, status, name);
      assert.deepEqual(await res.json(), body, name);
    }
    const key = randomUUID();
    assert.equal((await sys.post(ok, { headers: { 'x-lb-idempotency-key': key } })).status, 202);
    const replay = await sys.post(ok, { headers: { 'x-lb-idempotency-key': key } });
    assert.equal(replay.status, 409);
    assert.deepEqual(await replay.json(), { code: 40901, msg: 'idempotency key already accepted', data: null });
  });

  test('Telegram: the webhook secret is checked and a group mention is answered by a streamed, edited message', async () => {
    const ingress = sys.services.get('ingress').url;
    const update = (id: number, chat: object, text: string) => ({ update_id: id, message: { message_id: id, from: { id: 42, is_bot: false, first_name: 'Ann' }, chat, date: 1, text } });
    const bad = await fetch(`${ingress}/telegram/${tgBotId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'wrong' }, body: JSON.stringify(update(1, { id: 7, type: 'private' }, 'hi')) });
    assert.equal(bad.status, 401);
    // Twenty words, one per delta: the runner streams snapshots and the bot (enable-stream-reply) edits one message.
    const answer = `Group answer ${Array.from({ length: 18 }, (_, i) => `w${i}`).join(' ')}`;
    sys.llm.setDefault({ text: answer });
    const groupChat = -100123;
    const question = `what is up ${uniqueName('q')}`;
    const res = await fetch(`${ingress}/telegram/${tgBotId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': tgSecret }, body: JSON.stringify(update(2, { id: groupChat, type: 'supergroup', title: 'Team' }, `@conveyor_bot ${question}`)) });
    assert.equal(res.status, 200);
    await tg.waitFor(() => tg.chat(groupChat).some((m) => m.text.endsWith('w17')), 30_000);
    const messages = tg.chat(groupChat);
    assert.equal(messages.length, 1, 'one message, edited in place');
    assert.ok(messages[0].text.endsWith(answer), `final text is the whole answer: ${messages[0].text}`);
    assert.ok(messages[0].edits >= 2, `placeholder then throttled edits, saw ${messages[0].edits}`);
    const sends = tg.calls.filter((c) => c.method === 'sendMessage' && c.params.chat_id === groupChat);
    assert.equal(sends[0]?.params.text, 'Thinking...');
    // The mention reached the model without the @name. Messages of earlier tests may reach the model
    // later than this one, so the check needs this question's own request, not the last one.
    const request = await waitUntil('the model request of the group mention', () =>
      sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes(question)));
    assert.doesNotMatch(JSON.stringify(request.body.messages), /@conveyor_bot/);
  });

  test('web chat in Chromium: a streamed answer, a model answer, and a reset', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'conveyor-chromium-'));
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({
        executablePath: '/usr/bin/chromium',
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      });
      const page = await browser.newPage();
      // The bot's event stream answers once it is subscribed (its `connected` comment comes after the subscription).
      const listening = page.waitForResponse((r) => r.url().endsWith(`/bots/${sys.botId}/session/events`) && r.status() === 200, { timeout: 30_000 });
      // The token in the link's fragment: the page keeps it for the tab and drops it from the address bar.
      await page.goto(`${sys.services.get('ingress').url}/chat#token=${encodeURIComponent(webChatToken)}`);
      await page.locator('#bot option').first().waitFor({ state: 'attached' });
      assert.equal(new URL(page.url()).hash, '');
      await page.selectOption('#bot', sys.botId);
      await listening;
      const sessionKey = await page.evaluate((b) => (globalThis as any).sessionStorage.getItem('conveyor-session-key-' + b) as string | null, sys.botId);
      assert.match(sessionKey ?? '', /^[A-Za-z0-9_-]{43}$/, 'the page made a 256-bit session key');

      // A model answer through the whole pipeline.
      sys.llm.setDefault({ text: 'Hello from the web chat bot' });
      const accepted = page.waitForResponse((r) => r.url().endsWith('/session/messages'), { timeout: 30_000 });
      await page.fill('#input', 'hi there');
      await page.click('#send');
      const { sessionId } = (await (await accepted).json()) as { sessionId: string };
      assert.ok(!sessionId.includes(sessionKey!), 'the session id does not show the key');
      await page.locator('.msg.bot', { hasText: 'Hello from the web chat bot' }).waitFor({ timeout: 30_000 });

      // A streamed answer: the bubble grows snapshot by snapshot, then settles on the final text.
      const r = route(sys.botId, sessionId, 'webchat');
      const seen = new Set<string>();
      const watcher = setInterval(() => void page.locator('.msg.bot').last().textContent().then((t) => t && seen.add(t)).catch(() => undefined), 20);
      const text = await events.streamReply(r, randomUUID(), ['Streaming', 'works', 'in', 'the', 'browser', 'as', 'it', 'is', 'generated'], { gapMs: 150 });
      await page.locator('.msg.bot', { hasText: text }).waitFor({ timeout: 15_000 });
      clearInterval(watcher);
      const partial = [...seen].filter((t) => t.startsWith('Streaming') && t !== text);
      assert.ok(partial.length >= 2, `saw intermediate snapshots: ${JSON.stringify([...seen])}`);
      assert.equal(await page.locator('.msg.bot.streaming').count(), 0, 'no bubble left streaming');

      await page.click('#reset');
      await page.locator('.msg.system', { hasText: 'Conversation reset' }).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('.msg.bot').count(), 0);
      const newKey = await page.evaluate((b) => (globalThis as any).sessionStorage.getItem('conveyor-session-key-' + b) as string | null, sys.botId);
      assert.notEqual(newKey, sessionKey, 'a fresh session after reset');

      // Opened without the token (another browser context: nothing stored), the page asks for it.
      const bare = await browser.newPage();
      await bare.goto(`${sys.services.get('ingress').url}/chat`);
      await bare.locator('#login').waitFor({ state: 'visible' });
      await bare.fill('#token', 'not-the-web-chat-token');
      await bare.click('#login button');
      await bare.locator('.msg.error', { hasText: 'token was not accepted' }).waitFor({ timeout: 10_000 });
      assert.equal(await bare.locator('#bot option').count(), 0);
      await bare.fill('#token', webChatToken);
      await bare.click('#login button');
      await bare.locator('#bot option').first().waitFor({ state: 'attached' });
      assert.equal(await bare.locator('#login').isVisible(), false);
      assert.equal(await bare.evaluate(() => (globalThis as any).sessionStorage.getItem('conveyor-webchat-token') as string | null), webChatToken);
    } finally {
      await browser?.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('no credential reaches the service logs, even at debug level', async () => {
    const authorization = `Bearer ${uniqueName('authorization')}`;
    const cookie = `sid=${uniqueName('cookie')}`;
    const session = uniqueName('logs');
    // Not a credential: tells this test's request lines from the earlier tests' ones.
    const marker = { 'x-test-request': uniqueName('request') };
    sys.llm.setDefault({ text: 'Logged answer' });

    const raw = JSON.stringify({ session_id: session, message: [{ type: 'Plain', text: 'hi' }] });
    const ts = String(Math.floor(Date.now() / 1000));
    const signature = sign(sys.inboundSecret, ts, raw);
    const accepted = await sys.post(null, { rawBody: raw, headers: { 'x-lb-timestamp': ts, 'x-lb-signature': signature, authorization, cookie, ...marker } });
    assert.equal(accepted.status, 202);
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.session_id === session && c.json.is_final), 30_000);

    const chat = 4242;
    const update = { update_id: chat, message: { message_id: 1, from: { id: 42, is_bot: false, first_name: 'Ann' }, chat: { id: chat, type: 'private' }, date: 1, text: 'hello' } };
    const webhook = await fetch(`${sys.services.get('ingress').url}/telegram/${tgBotId}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': tgSecret, authorization, cookie, ...marker }, body: JSON.stringify(update),
    });
    assert.equal(webhook.status, 200);
    await tg.waitFor(() => tg.chat(chat).some((m) => m.text.endsWith('Logged answer')), 30_000);

    // Both requests were logged at debug, with their credential headers redacted.
    const requestLine = (url: string) => sys.services.get('ingress').logs.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => l.req?.url === url && l.req.headers['x-test-request'] === marker['x-test-request'] && l.res);
    const [httpBot, telegram] = await Promise.all([`/bots/${sys.botId}`, `/telegram/${tgBotId}`].map((url) => waitUntil(`request log of ${url}`, () => requestLine(url))));
    assert.equal(httpBot.level, 20);
    assert.deepEqual([httpBot.req.headers['x-lb-signature'], httpBot.req.headers.authorization, httpBot.req.headers.cookie], ['[Redacted]', '[Redacted]', '[Redacted]']);
    assert.equal(telegram.req.headers['x-telegram-bot-api-secret-token'], '[Redacted]');

    const logs = sys.services.allLogs();
    const secrets = { tgSecret, tgToken, inboundSecret: sys.inboundSecret, signature, authorization, cookie, llmKey: 'e2e-llm-key' };
    for (const [name, secret] of Object.entries(secrets)) assert.ok(!logs.includes(secret), `${name} appears in the logs`);
  });
});
