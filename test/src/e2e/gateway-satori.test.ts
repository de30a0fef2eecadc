import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeSatori, type FakeSatori } from '../fakes/index.js';
import { gatewayHolder, gatewayLogs } from '../harness/gateway.js';
import { waitUntil } from '../harness/wait.js';

const TOKEN = 'satori-e2e-token';
const BAD_TOKEN = 'satori-e2e-not-a-token';
const LEASE_TTL_MS = 3_000;

/** Satori through the gateway: the fake Satori server's events → two gateway replicas → pipeline → message.create back. */
describe('Satori through the gateway', () => {
  let sys: TestSystem;
  let satori: FakeSatori;
  let bot: string;

  before(async () => {
    sys = await startTestSystem();
    satori = await startFakeSatori({ tokens: [TOKEN] });
    bot = await addBot(sys, 'Satori', 'satori', { endpoint: satori.endpoint, token: TOKEN });
    const env = { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) };
    await Promise.all([sys.services.start('gateway', env, 'gateway-1'), sys.services.start('gateway', env, 'gateway-2')]);
    await satori.waitForConnections((c) => c.get(TOKEN)?.open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await satori?.close();
  });

  const answered = (channel: string, text: string) => satori.sent().filter((c) => c.body.channel_id === channel && String(c.body.content).endsWith(text));
  const failureLogs = () => sys.services.allLogs().split('\n').filter((l) => /"level":[45]0/.test(l)).slice(-30).join('\n');

  test('a direct message is answered in its channel quoting it, for the login READY named; the bot\'s own messages are not', async () => {
    const asked = satori.emitMessage(TOKEN, { channelId: 'private:42', direct: true, userId: '42', content: 'hello &amp; welcome' });
    await satori.waitFor(() => answered('private:42', 'Echo: hello &amp; welcome').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    const [reply] = answered('private:42', 'Echo: hello &amp; welcome');
    assert.equal(reply.body.content, `<quote id="${asked}"/>Echo: hello &amp; welcome`, 'quoted, the text escaped again');
    assert.equal(reply.platform, satori.platform);
    assert.equal(reply.selfId, satori.selfId);
    assert.equal(reply.token, TOKEN);
    satori.emitMessage(TOKEN, { channelId: 'private:42', direct: true, userId: satori.selfId, content: 'my own words' });
    satori.emitMessage(TOKEN, { channelId: 'private:42', direct: true, userId: '42', content: 'next' });
    await satori.waitFor(() => answered('private:42', 'Echo: next').length === 1, 60_000);
    assert.ok(!satori.sent().some((c) => String(c.body.content).includes('my own words')));
  });

  test('a channel message mentioning the bot is answered in the channel, mentioning the asker', async () => {
    satori.emitMessage(TOKEN, { channelId: 'room-1', userId: '43', content: `<at id="${satori.selfId}"/> hi room` });
    await satori.waitFor(() => answered('room-1', 'hi room').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    assert.match(String(answered('room-1', 'hi room')[0].body.content), /^<quote id="[^"]+"\/><at id="43"\/>/);
  });

  test('bad input on the socket is logged with the bot id; the next message is answered', async () => {
    satori.emitRaw(TOKEN, 'not json');
    satori.emitEvent(TOKEN, { type: 'message-created', channel: {} });
    await waitUntil('the bad frames logged', () => {
      const lines = gatewayLogs(sys.services).filter((l) => l.includes('malformed event from the platform connection') && l.includes(bot));
      return lines.some((l) => l.includes('not JSON')) && lines.some((l) => l.includes('message-created: channel'));
    }, 30_000);
    satori.emitMessage(TOKEN, { channelId: 'private:44', direct: true, userId: '44', content: 'after the noise' });
    await satori.waitFor(() => answered('private:44', 'Echo: after the noise').length === 1, 60_000);
  });

  test('a dropped socket identifies with the last sn: what came meanwhile is replayed and answered once', async () => {
    const before = { ...satori.connections.get(TOKEN)! };
    satori.dropConnections(TOKEN);
    satori.emitMessage(TOKEN, { channelId: 'private:45', direct: true, userId: '45', content: 'while you were away' });
    await satori.waitForConnections((c) => c.get(TOKEN)!.resumed > before.resumed && c.get(TOKEN)!.open === 1, 60_000);
    await satori.waitFor(() => answered('private:45', 'Echo: while you were away').length === 1, 60_000);
    satori.emitMessage(TOKEN, { channelId: 'private:45', direct: true, userId: '45', content: 'back again' });
    await satori.waitFor(() => answered('private:45', 'Echo: back again').length === 1, 60_000);
    assert.equal(answered('private:45', 'Echo: while you were away').length, 1);
  });

  test('SIGKILL of the holder: the other replica takes over from the stored sn and answers what was sent meanwhile once', async () => {
    const owner = await waitUntil('the holder', () => gatewayHolder(sys.services, bot), 30_000);
    const before = { ...satori.connections.get(TOKEN)! };
    await sys.services.kill(owner, 'SIGKILL');
    await satori.waitForConnections((c) => c.get(TOKEN)?.open === 0, 30_000);
    satori.emitMessage(TOKEN, { channelId: 'private:46', direct: true, userId: '46', content: 'while nobody held the bot' });
    await satori.waitForConnections((c) => c.get(TOKEN)!.open === 1 && c.get(TOKEN)!.resumed + c.get(TOKEN)!.fresh > before.resumed + before.fresh, 60_000);
    assert.equal(satori.connections.get(TOKEN)!.fresh, before.fresh, 'the replica taking over went on from the stored sn');
    await satori.waitFor(() => answered('private:46', 'Echo: while nobody held the bot').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${gatewayLogs(sys.services).filter((l) => /"level":[45]0|Satori/.test(l)).slice(-30).join('\n')}`);
    });
    satori.emitMessage(TOKEN, { channelId: 'private:46', direct: true, userId: '46', content: 'after the takeover' });
    await satori.waitFor(() => answered('private:46', 'Echo: after the takeover').length === 1, 60_000);
    assert.equal(answered('private:46', 'Echo: while nobody held the bot').length, 1, 'answered once');
    assert.equal(satori.connections.get(TOKEN)?.maxOpen, 1, 'never two connections of one bot');
  });

  test('a bad token: the server closes the socket, the gateway logs it with the bot id and backs off', async () => {
    const bad = await addBot(sys, 'Satori (bad token)', 'satori', { endpoint: satori.endpoint, token: BAD_TOKEN });
    const started = Date.now();
    await waitUntil('three refused attempts', () => satori.rejected >= 3 || undefined, 90_000);
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out');
    assert.ok(satori.rejected <= 10, `backed off: ${satori.rejected} attempts`);
    await waitUntil('the refusal logged with the bot id', () => gatewayLogs(sys.services).some((l) => l.includes('platform connection failed') && l.includes(bad) && l.includes('4004')), 30_000);
    for (const token of [TOKEN, BAD_TOKEN]) assert.ok(!gatewayLogs(sys.services).some((l) => l.includes(token)), 'tokens never reach the logs');
  });
});
