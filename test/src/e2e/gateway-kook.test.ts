import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeKook, type FakeKook } from '../fakes/index.js';
import { waitUntil } from '../harness/wait.js';
import { gatewayHolder, gatewayLogs as allGatewayLogs } from '../harness/gateway.js';

const TOKEN = 'kook-e2e-bot-token';
const BAD_TOKEN = 'kook-e2e-not-a-token';
const LEASE_TTL_MS = 3_000;

/** KOOK through the gateway: the fake KOOK's WebSocket → two gateway replicas → pipeline → REST back to the fake. */
describe('KOOK through the gateway', () => {
  let sys: TestSystem;
  let kook: FakeKook;
  let bot: string;
  const env = { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) };

  before(async () => {
    sys = await startTestSystem();
    kook = await startFakeKook({ tokens: [TOKEN] });
    bot = await addBot(sys, 'KOOK', 'kook', { token: TOKEN, api_base_url: kook.apiBase });
    await Promise.all([sys.services.start('gateway', env, 'gateway-1'), sys.services.start('gateway', env, 'gateway-2')]);
    await kook.waitForSessions((s) => s.byToken.get(TOKEN)?.open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await kook?.close();
  });

  const gatewayLogs = () => allGatewayLogs(sys.services);
  const holderOf = (botId: string) => gatewayHolder(sys.services, botId);
  const directTo = (user: string, text: string) => kook.shown().filter((m) => m.kind === 'direct' && m.targetId === user && m.content === text);
  const failureLogs = () => sys.services.allLogs().split('\n').filter((l) => /"level":[45]0/.test(l)).slice(-30).join('\n');

  test('a direct message is answered with a KMarkdown direct message quoting it; the bot\'s own and other bots\' messages are not', async () => {
    const user = '2000001';
    const asked = kook.emitMessage(TOKEN, { authorId: user, content: 'hello over kook' });
    await kook.waitFor(() => directTo(user, 'Echo: hello over kook').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    const [reply] = directTo(user, 'Echo: hello over kook');
    assert.equal(reply.type, 9, 'KMarkdown');
    assert.equal(reply.quote, asked);
    kook.emitMessage(TOKEN, { authorId: kook.botUserId, content: 'my own words' });
    kook.emitMessage(TOKEN, { authorId: '2000009', content: 'a bot speaking', bot: true });
    kook.emitMessage(TOKEN, { authorId: user, content: 'and now' });
    await kook.waitFor(() => directTo(user, 'Echo: and now').length === 1, 60_000);
    assert.ok(!kook.shown().some((m) => /my own words|a bot speaking/.test(m.content)));
  });

  test('a channel message mentioning the bot is answered in the channel, mentioning the asker, quoting the message', async () => {
    const channel = 'channel-77';
    const user = '2000002';
    const asked = kook.emitMessage(TOKEN, { channelId: channel, authorId: user, content: `(met)${kook.botUserId}(met) hi channel`, mention: [kook.botUserId] });
    await kook.waitFor(() => kook.shown().some((m) => m.kind === 'channel' && m.targetId === channel), 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    const reply = kook.shown().find((m) => m.kind === 'channel' && m.targetId === channel)!;
    assert.equal(reply.quote, asked);
    assert.equal(reply.type, 9);
    assert.match(reply.content, new RegExp(`^\\(met\\)${user}\\(met\\).*hi channel`), 'the group reply mentions its asker first, as KMarkdown');
  });

  test('bad input on the socket: frames that are no signal and events without their ids are logged, the next message is answered', async () => {
    kook.emitRaw(TOKEN, 'not json at all');
    kook.emitEvent(TOKEN, { channel_type: 'PERSON', type: 9, content: 'no ids' });
    await waitUntil('the bad frame logged', () => gatewayLogs().some((l) => l.includes('malformed event from the platform connection') && l.includes(bot) && l.includes('not JSON')) && gatewayLogs().some((l) => l.includes(bot) && l.includes('KOOK event: ')), 30_000);
    const user = '2000003';
    kook.emitMessage(TOKEN, { authorId: user, content: 'after the noise' });
    await kook.waitFor(() => directTo(user, 'Echo: after the noise').length === 1, 60_000);
  });

  test('a dropped socket is resumed by sn: a message sent while it was down is replayed and answered once', async () => {
    const before = { ...kook.sessions.byToken.get(TOKEN)! };
    kook.dropConnections(TOKEN);
    const user = '2000004';
    kook.emitMessage(TOKEN, { authorId: user, content: 'while you were away' });
    await kook.waitForSessions((s) => s.byToken.get(TOKEN)!.resumes > before.resumes && s.byToken.get(TOKEN)!.open === 1, 60_000);
    await kook.waitFor(() => directTo(user, 'Echo: while you were away').length === 1, 60_000);
    kook.emitMessage(TOKEN, { authorId: user, content: 'back again' });
    await kook.waitFor(() => directTo(user, 'Echo: back again').length === 1, 60_000);
    assert.equal(directTo(user, 'Echo: while you were away').length, 1);
    assert.equal(kook.sessions.byToken.get(TOKEN)!.begun, before.begun, 'resumed, not begun anew');
  });

  test('SIGKILL of the holder: the other replica takes over, resumes the session and answers what was sent meanwhile once', async () => {
    assert.equal(kook.sessions.byToken.get(TOKEN)?.maxOpen, 1, 'never two connections of one bot');
    const owner = await waitUntil('the owner of the bot', () => holderOf(bot), 30_000);
    const before = { ...kook.sessions.byToken.get(TOKEN)! };
    const session = kook.latestSession(TOKEN);
    await sys.services.kill(owner, 'SIGKILL');
    await kook.waitForSessions((s) => s.byToken.get(TOKEN)?.open === 0, 30_000);
    const user = '2000005';
    kook.emitMessage(TOKEN, { authorId: user, content: 'while nobody held the bot' });
    await kook.waitForSessions((s) => {
      const t = s.byToken.get(TOKEN);
      return t !== undefined && t.open === 1 && t.begun + t.resumes > before.begun + before.resumes;
    }, 60_000);
    const after = kook.sessions.byToken.get(TOKEN)!;
    assert.equal(after.begun, before.begun, 'the replica taking over resumed instead of beginning a new session');
    assert.equal(after.lastResumed, session, 'the session the killed holder held was resumed');
    await kook.waitFor(() => directTo(user, 'Echo: while nobody held the bot').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${gatewayLogs().filter((l) => /"level":[45]0|KOOK/.test(l)).slice(-30).join('\n')}`);
    });
    kook.emitMessage(TOKEN, { authorId: user, content: 'after the takeover' });
    await kook.waitFor(() => directTo(user, 'Echo: after the takeover').length === 1, 60_000);
    // A duplicate would trail the first answer closely: one more round trip is the yardstick.
    kook.emitMessage(TOKEN, { authorId: user, content: 'and once more' });
    await kook.waitFor(() => directTo(user, 'Echo: and once more').length === 1, 60_000);
    for (const text of ['while nobody held the bot', 'after the takeover']) assert.equal(directTo(user, `Echo: ${text}`).length, 1, `${text}: answered once`);
    assert.equal(kook.sessions.byToken.get(TOKEN)?.maxOpen, 1);
  });

  test('a bad token: KOOK answers 401, the gateway logs it with the bot id and backs off, the other bot goes on', async () => {
    const bad = await addBot(sys, 'KOOK (bad token)', 'kook', { token: BAD_TOKEN, api_base_url: kook.apiBase });
    const started = Date.now();
    const refused = () => kook.calls.filter((c) => c.token === BAD_TOKEN && c.status === 401).length;
    await waitUntil('three refused attempts', () => refused() >= 3 || undefined, 90_000);
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out');
    assert.ok(refused() <= 10, `backed off, not hammering: ${refused()} attempts`);
    await waitUntil('the refusal logged with the bot id', () => gatewayLogs().some((l) => l.includes('platform connection failed') && l.includes(bad) && l.includes('401')), 30_000);
    const user = '2000006';
    kook.emitMessage(TOKEN, { authorId: user, content: 'still here' });
    await kook.waitFor(() => directTo(user, 'Echo: still here').length === 1, 60_000);
    for (const token of [TOKEN, BAD_TOKEN]) assert.ok(!gatewayLogs().some((l) => l.includes(token)), 'tokens never reach the logs');
  });
});
