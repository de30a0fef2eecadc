import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addBot, addOneBotBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeOneBot, type FakeOneBot, type OneBotAction } from '../fakes/index.js';
import { sample } from '../harness/metrics.js';
import { waitUntil } from '../harness/wait.js';
import { freePort } from '../harness/ports.js';

const ACCESS_TOKEN = 'onebot-e2e-access-token';

const textOf = (a: OneBotAction): string =>
  (Array.isArray(a.params.message) ? a.params.message : []).map((s: { type: string; data: { text?: string } }) => (s.type === 'text' ? s.data.text ?? '' : '')).join('');

/** OneBot v11 through the gateway: the fake implementation → gateway → pipeline → send_msg back to the fake. */
describe('OneBot through the gateway', () => {
  let sys: TestSystem;
  let onebot: FakeOneBot;
  let botId: string;

  before(async () => {
    sys = await startTestSystem();
    onebot = await startFakeOneBot({ accessToken: ACCESS_TOKEN });
    botId = await addOneBotBot(sys, 'QQ bot', { host: onebot.host, port: onebot.port, 'access-token': ACCESS_TOKEN });
    await sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: '3000' });
    await onebot.waitForConnections((c) => c.open === 1);
  });

  after(async () => {
    await sys?.stop();
    await onebot?.close();
  });

  test('a private message is answered in the private chat and a group mention in the group, as whole replies', async () => {
    onebot.emitMessage({ messageType: 'private', userId: 424242, message: [{ type: 'text', data: { text: 'hello over qq' } }] });
    await onebot.waitFor((a) => a.some((x) => x.action === 'send_msg' && x.params.user_id === 424242), 60_000);
    const privateReply = onebot.sent().find((x) => x.params.user_id === 424242)!;
    assert.equal(privateReply.params.message_type, 'private');
    assert.equal(textOf(privateReply), 'Echo: hello over qq');

    onebot.emitMessage({ messageType: 'group', userId: 555, groupId: 8080, card: 'Alice', message: [{ type: 'at', data: { qq: String(onebot.selfId) } }, { type: 'text', data: { text: ' what time is it' } }] });
    await onebot.waitFor((a) => a.some((x) => x.action === 'send_msg' && x.params.group_id === 8080), 60_000);
    const groupReply = onebot.sent().filter((x) => x.params.group_id === 8080);
    assert.equal(groupReply.length, 1, 'one whole reply');
    assert.equal(groupReply[0].params.message_type, 'group');
    assert.match(textOf(groupReply[0]), /what time is it/);
    // The bot's own messages (the implementation reports them too) are never answered.
    onebot.emitMessage({ messageType: 'private', userId: onebot.selfId, message: [{ type: 'text', data: { text: 'my own words' } }] });
    onebot.emitMessage({ messageType: 'private', userId: 777, message: [{ type: 'text', data: { text: 'after my own' } }] });
    await onebot.waitFor((a) => a.some((x) => x.params.user_id === 777), 60_000);
    assert.equal(onebot.sent().filter((x) => x.params.user_id === onebot.selfId).length, 0);
    assert.ok(!onebot.sent().some((x) => textOf(x).includes('my own words')));
    assert.equal(onebot.connections.opened, 1);
    const gw = sys.services.get('gateway');
    assert.ok(!gw.logs.some((l) => l.includes(ACCESS_TOKEN)), 'the access token never reaches the logs');
  });

  test('malformed frames are logged and counted, and the messages around them are still answered', async () => {
    const gw = sys.services.get('gateway');
    onebot.emitMessage({ messageType: 'private', userId: 9001, message: [{ type: 'text', data: { text: 'before the garbage' } }] });
    onebot.sendRaw('this is not json');
    onebot.sendRaw(JSON.stringify({ post_type: 'message', message_type: 'private', self_id: onebot.selfId, message_id: 1, message: [] }));
    onebot.sendRaw(JSON.stringify({ post_type: 'message', message_type: 'group', self_id: onebot.selfId, message_id: 2, user_id: 5, message: [] }));
    onebot.sendRaw(JSON.stringify([1, 2, 3]));
    onebot.emitMessage({ messageType: 'private', userId: 9002, message: [{ type: 'text', data: { text: 'after the garbage' } }] });
    await onebot.waitFor((a) => a.some((x) => x.params.user_id === 9001) && a.some((x) => x.params.user_id === 9002), 60_000);
    assert.equal(textOf(onebot.sent().find((x) => x.params.user_id === 9002)!), 'Echo: after the garbage');
    await waitUntil('the malformed frames counted', async () => {
      const text = await (await fetch(`${gw.healthUrl}/metrics`)).text();
      return (sample(text, 'conveyor_gateway_malformed_events_total', { adapter: 'onebot' }) ?? 0) >= 4;
    }, 30_000, 250);
    const lines = gw.logs.filter((l) => l.includes('malformed event from the platform connection'));
    assert.ok(lines.some((l) => l.includes('frame is not JSON')), lines.join('\n'));
    assert.ok(lines.some((l) => l.includes('user_id')), 'the missing field is named');
    assert.ok(lines.some((l) => l.includes('group_id')), 'the missing field is named');
    assert.equal(onebot.connections.opened, 1, 'bad input does not cost the connection');
  });

  test('a bot with invalid settings is reported by field and costs the other bots nothing', async () => {
    const gw = sys.services.get('gateway');
    const broken = await addBot(sys, 'broken QQ bot', 'onebot', { mode: 'sideways', port: 'not a port' });
    await waitUntil('the invalid settings reported', () => gw.logs.some((l) => l.includes(`invalid onebot settings of bot ${broken}`) && l.includes('mode') && l.includes('port')), 30_000);
    onebot.emitMessage({ messageType: 'private', userId: 9100, message: [{ type: 'text', data: { text: 'still here' } }] });
    await onebot.waitFor((a) => a.some((x) => x.params.user_id === 9100), 60_000);
  });

  test('a reply sent while the connection is being re-established waits for it and goes out once', async () => {
    // The implementation restarts: every client is cut off without a close handshake.
    const before = onebot.connections.opened;
    onebot.emitMessage({ messageType: 'private', userId: 31337, message: [{ type: 'text', data: { text: 'ping across a reconnect' } }] });
    await onebot.waitFor((a) => a.some((x) => x.params.user_id === 31337), 60_000);
    await onebot.close();
    onebot = await restartOn(onebot.port);
    await onebot.waitForConnections((c) => c.open === 1, 60_000);
    assert.ok(before >= 1);
    onebot.emitMessage({ messageType: 'private', userId: 31338, message: [{ type: 'text', data: { text: 'after the restart' } }] });
    await onebot.waitFor((a) => a.some((x) => x.params.user_id === 31338), 60_000);
    assert.equal(onebot.sent().filter((x) => x.params.user_id === 31338).length, 1);
  });

  test('reverse WebSocket: the implementation connects to the gateway holding the bot; a wrong token or a second session is refused', async () => {
    const impl = await startFakeOneBot({ accessToken: ACCESS_TOKEN, selfId: 20002 });
    const intruder = await startFakeOneBot({ accessToken: 'not-the-token', selfId: 20002 });
    const second = await startFakeOneBot({ accessToken: ACCESS_TOKEN, selfId: 20002 });
    try {
      const port = await freePort();
      await addOneBotBot(sys, 'QQ bot (reverse)', { host: '127.0.0.1', port, 'access-token': ACCESS_TOKEN, mode: 'reverse' });
      const url = `ws://127.0.0.1:${port}/`;
      impl.connectReverse(url);
      await impl.waitForConnections((c) => c.open === 1, 60_000);
      const bad = intruder.connectReverse(url);
      const extra = second.connectReverse(url);
      await waitUntil('the wrong token and the second session refused', () => bad.refusals() >= 2 && extra.refusals() >= 2, 30_000);
      assert.equal(intruder.connections.opened, 0);
      assert.equal(second.connections.opened, 0, 'one implementation session per bot');
      bad.stop();
      extra.stop();
      impl.emitMessage({ messageType: 'group', userId: 61, groupId: 6060, message: [{ type: 'at', data: { qq: '20002' } }, { type: 'text', data: { text: ' reverse hello' } }] });
      await impl.waitFor((a) => a.some((x) => x.action === 'send_msg' && x.params.group_id === 6060), 60_000);
      assert.equal(textOf(impl.sent().find((x) => x.params.group_id === 6060)!), 'Echo: reverse hello');
      // The gateway restarts (a rolling update): the implementation's reconnection finds the new holder.
      await sys.services.kill('gateway', 'SIGTERM');
      await sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: '3000' });
      await impl.waitForConnections((c) => c.opened >= 2 && c.open === 1, 60_000);
      impl.emitMessage({ messageType: 'private', userId: 62, message: [{ type: 'text', data: { text: 'after the restart, reversed' } }] });
      await impl.waitFor((a) => a.some((x) => x.params.user_id === 62), 60_000);
      assert.equal(impl.sent().filter((x) => x.params.user_id === 62).length, 1);
      assert.equal(impl.connections.maxOpen, 1);
    } finally {
      await Promise.all([impl.close(), intruder.close(), second.close()]);
    }
  });
});

/** A new fake on the same port (the bot's config names it), as an implementation restarting; its message ids go on from where they were. */
async function restartOn(port: number): Promise<FakeOneBot> {
  return waitUntil('the port to be free again', async () => startFakeOneBot({ accessToken: ACCESS_TOKEN, port, firstMessageId: 900_000 }).catch(() => undefined), 30_000, 200);
}
