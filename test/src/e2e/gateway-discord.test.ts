import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { echoResponder, startFakeDiscord, type FakeDiscord } from '../fakes/index.js';
import { waitUntil } from '../harness/wait.js';
import { gatewayHolder, gatewayLogs as allGatewayLogs } from '../harness/gateway.js';

const STREAM_TOKEN = 'discord-e2e-stream-token';
const WHOLE_TOKEN = 'discord-e2e-whole-token';
const BAD_TOKEN = 'discord-e2e-not-a-token';
const LEASE_TTL_MS = 3_000;
const STREAMED = Array.from({ length: 48 }, (_, i) => `word${i}`).join(' ');
const LONG = Array.from({ length: 600 }, (_, i) => `line${i}`).join(' ');

/** Discord through the gateway: the fake Discord's Gateway → two gateway replicas → pipeline → REST back to the fake. */
describe('Discord through the gateway', () => {
  let sys: TestSystem;
  let discord: FakeDiscord;
  let streamBot: string;
  let wholeBot: string;
  const env = { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) };

  before(async () => {
    sys = await startTestSystem();
    discord = await startFakeDiscord({ tokens: [STREAM_TOKEN, WHOLE_TOKEN] });
    sys.llm.setDefault(async (body, n) => {
      const echo = await echoResponder(body, n);
      if (echo.text?.includes('stream please')) return { text: STREAMED, tokensPerSecond: 20 };
      if (echo.text?.includes('long please')) return { text: LONG };
      return echo;
    });
    streamBot = await addBot(sys, 'Discord (streaming)', 'discord', { client_id: '1001', token: STREAM_TOKEN, api_base_url: discord.apiBase, 'enable-stream-reply': true });
    wholeBot = await addBot(sys, 'Discord', 'discord', { client_id: '1002', token: WHOLE_TOKEN, api_base_url: discord.apiBase });
    await Promise.all([sys.services.start('gateway', env, 'gateway-1'), sys.services.start('gateway', env, 'gateway-2')]);
    await discord.waitForGateway((g) => g.identified.get(STREAM_TOKEN)?.open === 1 && g.identified.get(WHOLE_TOKEN)?.open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await discord?.close();
  });

  const postsTo = (channel: string) => discord.calls.filter((c) => c.method === 'POST' && c.path === `/channels/${channel}/messages` && c.status === 200);
  const holderOf = (botId: string) => gatewayHolder(sys.services, botId);
  const gatewayLogs = () => allGatewayLogs(sys.services);

  test('a DM is answered in the DM channel as a reply to the message; long text split at 2,000 characters; a 429 waited out', async () => {
    const user = '300000000000000001';
    const dm = discord.dmChannelOf(user);
    const first = discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'hello over discord' });
    await discord.waitFor(() => postsTo(dm).length >= 1, 60_000);
    assert.equal(discord.channel(dm)[0].content, 'Echo: hello over discord');
    assert.equal(discord.channel(dm)[0].replyTo, first);

    // The bot's own messages and other bots' are never answered.
    discord.emitMessage(WHOLE_TOKEN, { authorId: discord.botUserId, content: 'my own words' });
    discord.emitMessage(WHOLE_TOKEN, { authorId: '300000000000000002', content: 'a bot speaking', bot: true });
    discord.rateLimitNext(1, 0.3);
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'long please' });
    await discord.waitFor(() => discord.channel(dm).map((m) => m.content).join(' ') .includes('line599'), 60_000);
    const shown = discord.channel(dm).slice(1);
    assert.ok(shown.length >= 2 && shown.every((m) => m.content.length <= 2_000), `split into messages of at most 2,000 characters: ${shown.map((m) => m.content.length)}`);
    assert.equal(shown.map((m) => m.content).join(' '), LONG);
    assert.ok(discord.calls.some((c) => c.status === 429), 'the rate limit was hit and waited out');
    assert.ok(!discord.channel(dm).some((m) => /my own words|a bot speaking/.test(m.content)));
    assert.equal(discord.channel(discord.dmChannelOf('300000000000000002')).length, 0);
  });

  test('a guild mention is streamed into one message edited in place, the final edit holding the whole text', async () => {
    const channel = '700000000000000001';
    // A group reply mentions its asker first (the pipeline's at-sender), as LangBot does.
    const whole = `<@300000000000000003>${STREAMED}`;
    const asked = discord.emitMessage(STREAM_TOKEN, {
      guildId: '800000000000000001', channelId: channel, authorId: '300000000000000003',
      content: `<@${discord.botUserId}> stream please`, mentions: [{ id: discord.botUserId, username: 'conveyor-bot' }],
    });
    await discord.waitFor(() => discord.channel(channel)[0]?.content === whole, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}; calls: ${JSON.stringify(discord.calls.slice(-10))}\n${sys.services.allLogs().split('\n').filter((l) => /"level":[45]0/.test(l)).slice(-30).join('\n')}`);
    });
    assert.equal(postsTo(channel).length, 1, 'one message, created once');
    assert.equal(discord.channel(channel)[0].replyTo, asked);
    assert.ok(discord.calls.some((c) => c.method === 'GET' && c.path === `/channels/${channel}`), 'the channel\'s name read for the group name');
    const edits = discord.calls.filter((c) => c.method === 'PATCH' && c.path.startsWith(`/channels/${channel}/messages/`));
    assert.ok(edits.length >= 1, 'edited in place');
    assert.equal(edits.at(-1)!.body.content, whole);
    assert.ok(String(postsTo(channel)[0].body.content).length < whole.length, 'created with a first snapshot, not the whole text');
  });

  test('a dropped Gateway socket is resumed: a message sent while it was down is replayed and answered once', async () => {
    const before = discord.gateway.identified.get(WHOLE_TOKEN)!;
    const resumes = before.resumes;
    const identifies = before.identifies;
    discord.dropConnections(WHOLE_TOKEN);
    const user = '300000000000000006';
    const dm = discord.dmChannelOf(user);
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'while you were away' });
    await discord.waitForGateway((g) => g.identified.get(WHOLE_TOKEN)!.resumes > resumes && g.identified.get(WHOLE_TOKEN)!.open === 1, 60_000);
    await discord.waitFor(() => discord.channel(dm).some((m) => m.content === 'Echo: while you were away'), 60_000);
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'back again' });
    await discord.waitFor(() => discord.channel(dm).some((m) => m.content === 'Echo: back again'), 60_000);
    assert.equal(discord.channel(dm).filter((m) => m.content === 'Echo: while you were away').length, 1);
    assert.equal(discord.gateway.identified.get(WHOLE_TOKEN)!.identifies, identifies, 'resumed, not identified anew');
  });

  test('two replicas hold one Gateway session per bot; SIGKILL of the owner, the other takes over with RESUME and answers what was sent meanwhile once', async () => {
    for (const token of [STREAM_TOKEN, WHOLE_TOKEN]) assert.equal(discord.gateway.identified.get(token)?.maxOpen, 1, 'never two sessions of one bot');
    const owner = await waitUntil('the owner of the bot', () => holderOf(wholeBot), 30_000);
    const before = { ...discord.gateway.identified.get(WHOLE_TOKEN)! };
    const session = discord.latestSession(WHOLE_TOKEN);
    await sys.services.kill(owner, 'SIGKILL');
    // Sent while no replica holds the bot's Gateway session: only a RESUME of that session delivers it.
    await discord.waitForGateway((g) => g.identified.get(WHOLE_TOKEN)?.open === 0, 30_000);
    const user = '300000000000000004';
    const dm = discord.dmChannelOf(user);
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'while nobody held the bot' });
    await discord.waitForGateway((g) => {
      const s = g.identified.get(WHOLE_TOKEN);
      return s !== undefined && s.open === 1 && s.identifies + s.resumes > before.identifies + before.resumes;
    }, 60_000);
    const after = discord.gateway.identified.get(WHOLE_TOKEN)!;
    assert.equal(after.identifies, before.identifies, 'the replica taking over resumed the session instead of identifying anew');
    assert.equal(after.resumes, before.resumes + 1);
    assert.equal(after.lastResumed, session, 'the session the killed owner held was resumed');
    await discord.waitFor(() => discord.channel(dm).some((m) => m.content === 'Echo: while nobody held the bot'), 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${gatewayLogs().filter((l) => /"level":[45]0|Discord/.test(l)).slice(-30).join('\n')}`);
    });
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'after the takeover' });
    await discord.waitFor(() => discord.channel(dm).some((m) => m.content === 'Echo: after the takeover'), 60_000);
    // A duplicate would trail the first answer closely: one more round trip is the yardstick.
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'and once more' });
    await discord.waitFor(() => discord.channel(dm).some((m) => m.content === 'Echo: and once more'), 60_000);
    for (const text of ['while nobody held the bot', 'after the takeover']) assert.equal(discord.channel(dm).filter((m) => m.content === `Echo: ${text}`).length, 1, `${text}: answered once`);
    assert.equal(discord.gateway.identified.get(WHOLE_TOKEN)?.maxOpen, 1);
    assert.equal(discord.gateway.identified.get(STREAM_TOKEN)?.maxOpen, 1);
  });

  test('a bad token: Discord closes with 4004, the gateway logs it with the bot id and backs off, the other bots go on', async () => {
    const bad = await addBot(sys, 'Discord (bad token)', 'discord', { client_id: '1003', token: BAD_TOKEN, api_base_url: discord.apiBase });
    const started = Date.now();
    await discord.waitForGateway((g) => (g.rejected.get(BAD_TOKEN) ?? 0) >= 3, 90_000);
    const attempts = discord.gateway.rejected.get(BAD_TOKEN) ?? 0;
    // 1 s, 2 s, 4 s ... between attempts: three of them take seconds, not a tight loop.
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out');
    assert.ok(attempts <= 10, `backed off, not hammering: ${attempts} attempts`);
    await waitUntil('the refusal logged with the bot id', () => gatewayLogs().some((l) => l.includes('platform connection failed') && l.includes(bad) && l.includes('4004')), 30_000);
    const user = '300000000000000005';
    discord.emitMessage(WHOLE_TOKEN, { authorId: user, content: 'still here' });
    await discord.waitFor(() => discord.channel(discord.dmChannelOf(user)).some((m) => m.content === 'Echo: still here'), 60_000);
    const alive = sys.services.services.filter((s) => s.name === 'gateway' && s.child.exitCode === null && s.child.signalCode === null);
    assert.equal(alive.length, 1, 'the surviving replica did not crash');
    for (const token of [STREAM_TOKEN, WHOLE_TOKEN, BAD_TOKEN]) assert.ok(!gatewayLogs().some((l) => l.includes(token)), 'tokens never reach the logs');
  });
});
