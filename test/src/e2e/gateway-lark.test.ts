import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt, randomUUID } from 'node:crypto';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeLark, type FakeLark } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';

const LEASE_TTL_MS = 3_000;

/**
 * Lark / Feishu over the long connection (LangBot's default, `enable-webhook` off): the fake's
 * endpoint and WebSocket (binary pbbp2 frames) → the gateway → pipeline → the fake's Open API.
 */
describe('Lark long connection through the gateway', () => {
  let sys: TestSystem;
  let lark: FakeLark;
  let botId: string;
  const appId = `cli_${uniqueName('ws-app')}`;
  const appSecret = uniqueName('ws-app-secret');
  const botName = 'Conveyor Bot';

  const openId = () => `ou_${randomInt(1, 2 ** 40).toString(16)}`;
  const messageEvent = (opts: { chatType: 'p2p' | 'group'; text: string; mentions?: unknown[]; eventId?: string }) => {
    const messageId = `om_in_${randomInt(1, 2 ** 40)}`;
    const sender = openId();
    return {
      messageId,
      body: {
        schema: '2.0',
        header: { event_id: opts.eventId ?? `ev_${randomUUID()}`, event_type: 'im.message.receive_v1', create_time: String(Date.now()), token: '', app_id: appId, tenant_key: 'tk' },
        event: {
          sender: { sender_id: { open_id: sender, union_id: `on_${sender}` }, sender_type: 'user', tenant_key: 'tk' },
          message: {
            message_id: messageId, chat_id: `oc_${randomInt(1, 2 ** 40)}`, chat_type: opts.chatType, message_type: 'text', create_time: String(Date.now()),
            content: JSON.stringify({ text: opts.text }), ...(opts.mentions ? { mentions: opts.mentions } : {}),
          },
        },
      },
    };
  };
  const acksOf = (wsMessageId: string) => lark.ws.frames.filter((f) => f.type === 'ack' && f.messageId === wsMessageId);
  const gatewayLogs = () => sys.services.services.filter((s) => s.name === 'gateway').flatMap((s) => s.logs);

  before(async () => {
    sys = await startTestSystem({ modelAbilities: ['func_call', 'vision'] });
    lark = await startFakeLark({ appId, appSecret, pingIntervalSeconds: 1 });
    // No enable-webhook: off by default, as in LangBot, so the gateway holds the bot's long connection.
    botId = await addBot(sys, 'Lark (long connection)', 'lark', { app_id: appId, app_secret: appSecret, bot_name: botName, domain: 'custom', custom_domain: lark.url });
    await sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) }, 'gateway-1');
    await lark.waitForWs((w) => w.open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await lark?.close();
  });

  test('an event frame is answered at the Open API and acked with code 200; the client pings', async () => {
    const answer = `Lark WS answer ${uniqueName('a')}`;
    sys.llm.setDefault({ text: answer });
    const { messageId, body } = messageEvent({ chatType: 'p2p', text: 'hello over the long connection' });
    const frameId = lark.emitEvent(body);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 60_000);
    await lark.waitForWs(() => acksOf(frameId).length === 1, 30_000);
    assert.equal(acksOf(frameId)[0]!.code, 200);
    assert.match(acksOf(frameId)[0]!.bizRt, /^\d+$/);
    await lark.waitForWs((w) => w.frames.filter((f) => f.type === 'ping').length >= 2, 30_000);
    assert.ok(lark.ws.frames.every((f) => f.service === lark.ws.frames[0]!.service), 'every frame carries the service id of the endpoint');
  });

  test('an image over the long connection is downloaded with the app\'s token and reaches the model inline', async () => {
    const answer = `Lark WS image ${uniqueName('i')}`;
    sys.llm.setDefault({ text: answer });
    const jpeg = Buffer.from('/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAEBAQ==', 'base64');
    const { messageId, body } = messageEvent({ chatType: 'p2p', text: '' });
    Object.assign(body.event.message, { message_type: 'image', content: JSON.stringify({ image_key: 'img_v3_ws' }) });
    lark.addResource(messageId, 'img_v3_ws', jpeg, 'image/jpeg');
    const before = sys.llm.requests.length;
    lark.emitEvent(body);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 60_000);
    const user = sys.llm.requests.slice(before).map((r) => r.body.messages?.findLast((m: { role: string }) => m.role === 'user')).find((m) => JSON.stringify(m).includes('image_url'));
    assert.deepEqual(user?.content, [{ type: 'image_url', image_url: { url: `data:image/jpeg;base64,${jpeg.toString('base64')}` } }]);
  });

  test('an event split in three frames is joined, answered and acked once', async () => {
    const answer = `Lark split answer ${uniqueName('s')}`;
    sys.llm.setDefault({ text: answer });
    const { messageId, body } = messageEvent({
      chatType: 'group', text: `@_user_1 ${'a long question '.repeat(20)}`,
      mentions: [{ key: '@_user_1', id: { open_id: 'ou_bot' }, name: botName, tenant_key: 'tk' }],
    });
    const frameId = lark.emitEvent(body, { parts: 3 });
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text.includes(answer)), 60_000);
    await lark.waitForWs(() => acksOf(frameId).length >= 1, 30_000);
    assert.deepEqual(acksOf(frameId).map((a) => a.code), [200]);
  });

  test('the same event delivered again is acked and answered once', async () => {
    const answer = `Lark once ${uniqueName('o')}`;
    sys.llm.setDefault({ text: answer });
    const { messageId, body } = messageEvent({ chatType: 'p2p', text: 'say it once' });
    // Lark redelivers with the same event_id in a new frame.
    const first = lark.emitEvent(body);
    const again = lark.emitEvent(body);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 60_000);
    await lark.waitForWs(() => acksOf(first).length === 1 && acksOf(again).length === 1, 30_000);
    assert.deepEqual([...acksOf(first), ...acksOf(again)].map((a) => a.code), [200, 200]);
    // A later message is answered too; by then a second answer to the redelivery would have come.
    const next = `Lark after ${uniqueName('n')}`;
    sys.llm.setDefault({ text: next });
    const later = messageEvent({ chatType: 'p2p', text: 'and now' });
    lark.emitEvent(later.body);
    await lark.waitFor(() => lark.repliesTo(later.messageId).some((m) => m.text === next), 60_000);
    assert.deepEqual(lark.repliesTo(messageId).map((m) => m.text), [answer], 'one reply to the redelivered event');
  });

  test('a frame that is no pbbp2 frame and an event that is no JSON are logged and counted; the connection goes on', async () => {
    lark.emitRaw(Buffer.from('definitely not protobuf'));
    const broken = lark.emitEvent('{"schema": "2.0", "header": ');
    await lark.waitForWs(() => acksOf(broken).length === 1, 30_000);
    assert.equal(acksOf(broken)[0]!.code, 200, 'taken: delivering it again would not help');
    await waitUntil('both logged with the bot id', () => {
      const lines = gatewayLogs().filter((l) => l.includes('malformed event from the platform connection') && l.includes(botId));
      return lines.some((l) => l.includes('not a pbbp2 frame')) && lines.some((l) => l.includes('not valid JSON'));
    }, 30_000);
    const answer = `Lark still here ${uniqueName('h')}`;
    sys.llm.setDefault({ text: answer });
    const { messageId, body } = messageEvent({ chatType: 'p2p', text: 'still there?' });
    lark.emitEvent(body);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 60_000);
    assert.equal(lark.ws.open, 1);
  });

  test('Lark closing the socket: the gateway connects again and the next event is answered', async () => {
    const opened = lark.ws.opened;
    lark.dropConnections();
    await lark.waitForWs((w) => w.opened > opened && w.open === 1, 60_000);
    await waitUntil('the reconnection logged with the bot id', () => gatewayLogs().some((l) => l.includes('platform connection ended; reconnecting') && l.includes(botId)), 30_000);
    const answer = `Lark back ${uniqueName('b')}`;
    sys.llm.setDefault({ text: answer });
    const { messageId, body } = messageEvent({ chatType: 'p2p', text: 'are you back' });
    const frameId = lark.emitEvent(body);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 60_000);
    await lark.waitForWs(() => acksOf(frameId).length === 1, 30_000);
    assert.equal(lark.ws.open, 1, 'one long connection per bot');
  });

  test('a wrong app secret: the endpoint refuses, the gateway logs the code with the bot id and backs off', async () => {
    const bad = await addBot(sys, 'Lark (wrong secret)', 'lark', { app_id: appId, app_secret: 'not-the-secret', bot_name: botName, domain: 'custom', custom_domain: lark.url });
    const started = Date.now();
    const refused = lark.ws.refused;
    await lark.waitForWs((w) => w.refused >= refused + 3, 90_000);
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out (1 s, 2 s, ...)');
    await waitUntil('the refusal logged with the bot id', () => gatewayLogs().some((l) => l.includes('platform connection failed') && l.includes(bad) && l.includes('code 514')), 30_000).catch((err: Error) => {
      throw new Error(`${err.message}; gateway said: ${gatewayLogs().filter((l) => l.includes(bad)).slice(-3).join('\n')}`);
    });
    assert.equal(lark.ws.open, 1, 'the good bot keeps its connection');
    for (const secret of [appSecret, 'not-the-secret']) assert.ok(!gatewayLogs().some((l) => l.includes(secret)), 'app secrets never reach the logs');
  });
});
