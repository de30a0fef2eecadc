import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { echoResponder, startFakeMatrix, type FakeMatrix } from '../fakes/index.js';
import { waitUntil } from '../harness/wait.js';
import { gatewayHolder, gatewayLogs as allGatewayLogs } from '../harness/gateway.js';

const WHOLE = { token: 'matrix-e2e-whole-token', userId: '@conveyor:hs.test', displayName: 'Conveyor' };
const STREAM = { token: 'matrix-e2e-stream-token', userId: '@streamer:hs.test', displayName: 'Streamer' };
const ALICE = '@alice:hs.test';
const BOB = '@bob:hs.test';
const LEASE_TTL_MS = 3_000;
const STREAMED = Array.from({ length: 48 }, (_, i) => `word${i}`).join(' ');

/** Matrix through the gateway: the fake homeserver's /sync long poll → two gateway replicas → pipeline → the dispatcher's sends back to it. */
describe('Matrix through the gateway', () => {
  let sys: TestSystem;
  let hs: FakeMatrix;
  let wholeBot: string;
  let dm: string;
  let lobby: string;
  let streamRoom: string;
  const env = { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) };

  before(async () => {
    sys = await startTestSystem({ modelAbilities: ['func_call', 'vision'] });
    hs = await startFakeMatrix({ users: [WHOLE, STREAM] });
    sys.llm.setDefault(async (body, n) => {
      const echo = await echoResponder(body, n);
      if (echo.text?.includes('stream please')) return { text: STREAMED, tokensPerSecond: 20 };
      return echo;
    });
    dm = hs.createRoom([WHOLE.userId, ALICE]);
    lobby = hs.createRoom([WHOLE.userId, ALICE, BOB], 'Lobby');
    streamRoom = hs.createRoom([STREAM.userId, ALICE, BOB], 'Streaming room');
    // Said before the bot first synced: the backlog is not answered.
    hs.emitMessage(dm, ALICE, 'an old message');
    wholeBot = await addBot(sys, 'Matrix', 'matrix', { homeserver_url: hs.url, user_id: WHOLE.userId, access_token: WHOLE.token });
    await addBot(sys, 'Matrix (streaming)', 'matrix', { homeserver_url: hs.url, user_id: STREAM.userId, access_token: STREAM.token, 'enable-stream-reply': true });
    await Promise.all([sys.services.start('gateway', env, 'gateway-1'), sys.services.start('gateway', env, 'gateway-2')]);
    await hs.waitFor(() => hs.polls(WHOLE.token).open === 1 && hs.polls(STREAM.token).open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await hs?.close();
  });

  const gatewayLogs = () => allGatewayLogs(sys.services);
  const failureLogs = () => sys.services.allLogs().split('\n').filter((l) => /"level":[45]0/.test(l)).slice(-30).join('\n');
  const answers = (room: string, text: string) => hs.shown(room).filter((m) => m.body === `Echo: ${text}`);
  const answered = (room: string, text: string) => hs.waitFor(() => answers(room, text).length === 1, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; shown: ${JSON.stringify(hs.shown(room).map((m) => m.body))}\n${failureLogs()}`);
  });

  test('a DM is answered in its room as a reply to the message; the backlog and the bot\'s own messages are not', async () => {
    const asked = hs.emitMessage(dm, ALICE, 'hello over matrix');
    await answered(dm, 'hello over matrix');
    assert.equal(answers(dm, 'hello over matrix')[0]!.replyTo, asked);
    // One more round trip: by then an answer to the backlog or to the bot's own reply would show.
    hs.emitMessage(dm, ALICE, 'and now');
    await answered(dm, 'and now');
    assert.ok(!hs.shown(dm).some((m) => /old message|Echo: Echo/.test(m.body)), JSON.stringify(hs.shown(dm).map((m) => m.body)));
    assert.equal(hs.syncsOf(WHOLE.token).filter((s) => s.since === undefined).length, 1, 'one initial sync, then long polls from its next_batch');
    const polls = hs.calls.filter((c) => c.token === WHOLE.token && c.path.endsWith('/sync') && c.query.since);
    assert.ok(polls.every((c) => c.query.timeout === '30000' && JSON.parse(c.query.filter!).room.timeline.types.includes('m.room.message')), 'long polls with a timeout and a filter');
  });

  test('in a group room a message without a mention is not answered; one mentioning the bot is, mentioning its asker', async () => {
    hs.emitMessage(lobby, BOB, 'just chatting among us');
    const asked = hs.emitMessage(lobby, ALICE, 'Conveyor: are you there', { mentions: [WHOLE.userId] });
    await hs.waitFor(() => hs.shown(lobby).length >= 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    const [reply] = hs.shown(lobby);
    assert.equal(reply!.replyTo, asked);
    assert.match(reply!.body, /^@alice:hs\.test Echo: .*are you there/, 'the group reply mentions its asker first');
    assert.deepEqual(reply!.mentions, [ALICE]);
    // A mention by the bot's user id in the body counts too (clients without intentional mentions).
    hs.emitMessage(lobby, BOB, `${WHOLE.userId} second question`);
    await hs.waitFor(() => hs.shown(lobby).some((m) => /second question/.test(m.body)), 60_000);
    assert.ok(!hs.shown(lobby).some((m) => /chatting among us/.test(m.body)), 'the message without a mention was not answered');
    assert.equal(hs.shown(lobby).length, 2);
  });

  test('a streamed reply is one message replaced by m.replace edits, the last one holding the whole text', async () => {
    const whole = `${ALICE} ${STREAMED}`;
    const asked = hs.emitMessage(streamRoom, ALICE, 'Streamer: stream please', { mentions: [STREAM.userId] });
    await hs.waitFor(() => hs.shown(streamRoom)[0]?.body === whole, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}; shown: ${JSON.stringify(hs.shown(streamRoom))}\n${failureLogs()}`);
    });
    const shown = hs.shown(streamRoom);
    assert.equal(shown.length, 1, 'one message');
    assert.equal(shown[0]!.replyTo, asked);
    const events = hs.sent().filter((e) => e.roomId === streamRoom);
    assert.ok(String(events[0]!.content.body).length < whole.length, 'created with a first snapshot, not the whole text');
    const edits = events.slice(1);
    assert.ok(edits.length >= 1 && edits.length <= 7, `edits bounded: ${edits.length}`);
    for (const e of edits) {
      assert.deepEqual(e.content['m.relates_to'], { rel_type: 'm.replace', event_id: shown[0]!.eventId });
      assert.equal(e.content.body, `* ${e.content['m.new_content'].body}`);
    }
    assert.equal(edits.at(-1)!.content['m.new_content'].body, whole);
  });

  test('an image is read through the authenticated media download and reaches the model inline; one too large becomes [Image]', async () => {
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
    const small = hs.uploadMedia(png, 'image/png');
    const before = sys.llm.requests.length;
    hs.emitImage(dm, ALICE, small, 'cat.png');
    await answered(dm, 'cat.png');
    const request = sys.llm.requests.slice(before).find((r) => JSON.stringify(r.body.messages).includes('image_url'));
    const user = request?.body.messages?.findLast((m: { role: string }) => m.role === 'user');
    assert.deepEqual(user?.content, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }, { type: 'text', text: 'cat.png' }]);
    assert.ok(hs.calls.some((c) => c.path.startsWith('/_matrix/client/v1/media/download/') && c.token === WHOLE.token), 'downloaded with the bot\'s token');

    const large = hs.uploadMedia(Buffer.alloc(600 * 1024, 1), 'image/jpeg');
    hs.emitImage(dm, ALICE, large, 'huge.jpg');
    await hs.waitFor(() => hs.shown(dm).some((m) => m.body.startsWith('Echo: [Image]')), 60_000).catch((err: Error) => {
      throw new Error(`${err.message}; shown: ${JSON.stringify(hs.shown(dm).map((m) => m.body))}\n${failureLogs()}`);
    });
    assert.ok(gatewayLogs().some((l) => l.includes('Matrix image not read') && l.includes(wholeBot) && l.includes('over 524288')));
  });

  test('bad input in a sync: malformed events are logged with the reason and skipped, the next message is answered', async () => {
    hs.emitEvent(dm, { type: 'm.room.message', event_id: '$bad-sender', sender: 'alice-without-server', origin_server_ts: 1, content: { msgtype: 'm.text', body: 'who am I' } });
    hs.emitEvent(dm, { type: 'm.room.message', event_id: '$no-body', sender: ALICE, origin_server_ts: 1, content: { msgtype: 'm.text' } });
    hs.emitEvent(dm, { content: 'no type at all' });
    await waitUntil('the bad events logged', () => {
      const logs = gatewayLogs().filter((l) => l.includes('malformed event from the platform connection') && l.includes(wholeBot));
      return logs.some((l) => l.includes('sender')) && logs.some((l) => l.includes('content.body')) && logs.some((l) => l.includes('type')) || undefined;
    }, 30_000);
    hs.emitMessage(dm, ALICE, 'after the noise');
    await answered(dm, 'after the noise');
    assert.ok(!hs.shown(dm).some((m) => /who am I/.test(m.body)));
  });

  test('an invitation is joined, and a mention in that room is answered', async () => {
    const room = hs.createRoom([ALICE, BOB], 'Invited here');
    hs.invite(room, WHOLE.userId);
    await hs.waitFor(() => hs.members(room).includes(WHOLE.userId), 30_000);
    hs.emitMessage(room, ALICE, 'Conveyor: welcome', { mentions: [WHOLE.userId] });
    await hs.waitFor(() => hs.shown(room).some((m) => /Echo: .*welcome/.test(m.body)), 60_000);
  });

  test('a bad access token: the homeserver answers 401, the gateway logs it with the bot id and backs off', async () => {
    const badToken = 'matrix-e2e-not-a-token';
    const bad = await addBot(sys, 'Matrix (bad token)', 'matrix', { homeserver_url: hs.url, user_id: '@nobody:hs.test', access_token: badToken });
    const started = Date.now();
    const refused = () => hs.calls.filter((c) => c.token === badToken && c.status === 401).length;
    await waitUntil('three refused attempts', () => refused() >= 3 || undefined, 90_000);
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out');
    assert.ok(refused() <= 10, `backed off, not hammering: ${refused()} attempts`);
    await waitUntil('the refusal logged with the bot id', () => gatewayLogs().some((l) => l.includes('platform connection failed') && l.includes(bad) && l.includes('M_UNKNOWN_TOKEN')), 30_000);
    assert.ok(!sys.services.allLogs().includes(badToken), 'the token never reaches the logs');
  });

  test('SIGKILL of the holder: the other replica takes over, syncs on from the stored next_batch and answers what was said meanwhile once', async () => {
    const owner = await waitUntil('the owner of the bot', () => gatewayHolder(sys.services, wholeBot), 30_000);
    const handedBefore = new Set(hs.batchesOf(WHOLE.token));
    const syncsBefore = hs.syncsOf(WHOLE.token).length;
    await sys.services.kill(owner, 'SIGKILL');
    await hs.waitFor(() => hs.polls(WHOLE.token).open === 0, 30_000);
    hs.emitMessage(dm, ALICE, 'while nobody held the bot');
    await answered(dm, 'while nobody held the bot');
    const resumed = hs.syncsOf(WHOLE.token).slice(syncsBefore);
    assert.ok(resumed.length >= 1);
    assert.ok(resumed.every((s) => s.since !== undefined), 'no new initial sync: the successor resumed');
    assert.ok(handedBefore.has(resumed[0]!.since!), `the first sync after the takeover starts at a position the killed holder was given: ${resumed[0]!.since}`);
    hs.emitMessage(dm, ALICE, 'after the takeover');
    await answered(dm, 'after the takeover');
    // A duplicate would trail the first answer closely: one more round trip is the yardstick.
    hs.emitMessage(dm, ALICE, 'and once more');
    await answered(dm, 'and once more');
    const bodies = hs.shown(dm).map((m) => m.body);
    assert.equal(new Set(bodies).size, bodies.length, `every message answered once: ${JSON.stringify(bodies)}`);
    assert.equal(hs.polls(WHOLE.token).maxOpen, 1, 'never two long polls of one bot at once');
    for (const token of [WHOLE.token, STREAM.token]) assert.ok(!sys.services.allLogs().includes(token), 'access tokens never reach the logs');
  });
});
