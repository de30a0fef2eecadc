import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { deflateSync } from 'node:zlib';
import { KookGatewayError, KookRest, KookSocket, type KookSession } from '@conveyor/kook';
import { startFakeKook, type FakeKook } from './kook-server.js';
import { waitUntil } from '../harness/wait.js';

const TOKEN = 'kook-socket-test-token';
let kook: FakeKook;
before(async () => {
  kook = await startFakeKook({ tokens: [TOKEN] });
});
after(() => kook.close());

const rest = () => new KookRest({ baseUrl: kook.apiBase, token: TOKEN });

/** A socket to the fake that records what it was handed. */
async function open(compress: boolean, resume?: KookSession) {
  const events: { sn: number; id: string }[] = [];
  const malformed: string[] = [];
  const sessions: (KookSession | undefined)[] = [];
  const socket = await KookSocket.connect({
    url: await rest().gatewayUrl(compress),
    ...(resume ? { resume } : {}),
    onEvent: (d, sn) => events.push({ sn, id: String((d as { msg_id?: string }).msg_id ?? '') }),
    onSession: (s) => sessions.push(s),
    onMalformed: (r) => malformed.push(r),
    pingEveryMs: 200,
  });
  return { socket, events, malformed, sessions };
}

for (const compress of [true, false]) {
  test(`${compress ? 'zlib-compressed' : 'plain'} frames: HELLO begins a session, events come in sn order, PINGs carry the latest sn`, async () => {
    const c = await open(compress);
    assert.equal(c.sessions[0]?.sessionId, kook.latestSession(TOKEN));
    const ids = [kook.emitMessage(TOKEN, { authorId: '1', content: 'a' }), kook.emitMessage(TOKEN, { authorId: '1', content: 'b' })];
    await waitUntil('both events', () => c.events.length === 2 || undefined, 10_000);
    assert.deepEqual(c.events.map((e) => e.id), ids);
    await waitUntil('a PING with the latest sn', () => kook.sessions.byToken.get(TOKEN)!.lastPingSn === c.events.at(-1)!.sn || undefined, 10_000);
    assert.deepEqual(c.malformed, []);
    await c.socket.close('test done');
  });
}

test('events out of order wait for the missing sn; a duplicate sn is dropped; bad frames are reported, the socket goes on', async () => {
  const c = await open(false);
  const frame = (sn: number) => JSON.stringify({ s: 0, sn, d: { msg_id: `raw-${sn}` } });
  kook.emitRaw(TOKEN, frame(1));
  kook.emitRaw(TOKEN, frame(3));
  kook.emitRaw(TOKEN, frame(2));
  kook.emitRaw(TOKEN, frame(2));
  kook.emitRaw(TOKEN, 'not json');
  kook.emitRaw(TOKEN, Buffer.from('not zlib'));
  kook.emitRaw(TOKEN, deflateSync(JSON.stringify({ d: 'no signal' })));
  kook.emitRaw(TOKEN, frame(999_999));
  kook.emitRaw(TOKEN, frame(4));
  await waitUntil('four events', () => c.events.length >= 4 || undefined, 10_000);
  assert.deepEqual(c.events.map((e) => e.sn), [1, 2, 3, 4]);
  await waitUntil('four bad frames', () => c.malformed.length >= 4 || undefined, 10_000);
  assert.equal(c.malformed.length, 4, c.malformed.join('; '));
  assert.ok(c.malformed.some((m) => m.includes('far ahead')), 'an sn far ahead is refused, not waited for');
  await c.socket.close('test done');
});

test('a dropped socket is resumed by sn: what it missed is replayed, then the RESUME ACK', async () => {
  const c = await open(true);
  kook.emitMessage(TOKEN, { authorId: '1', content: 'before' });
  await waitUntil('the first event', () => c.events.length === 1 || undefined, 10_000);
  const session = c.socket.resumable()!;
  kook.dropConnections(TOKEN);
  await c.socket.ended;
  const missed = kook.emitMessage(TOKEN, { authorId: '1', content: 'while away' });
  const resumed = await open(true, session);
  assert.equal(kook.sessions.byToken.get(TOKEN)!.lastResumed, session.sessionId);
  assert.deepEqual(resumed.events.map((e) => e.id), [missed], 'replayed before the ACK');
  assert.deepEqual(resumed.sessions, [{ sessionId: session.sessionId, sn: session.sn + 1 }]);
  await resumed.socket.close('test done');
});

test('a session KOOK no longer knows: RECONNECT ends it, and connecting rejects', async () => {
  const c = await open(false);
  const session = c.socket.resumable()!;
  await c.socket.close('leaving');
  kook.expireSessions(TOKEN);
  const sessions: (KookSession | undefined)[] = [];
  await assert.rejects(
    KookSocket.connect({ url: await rest().gatewayUrl(false), resume: session, onEvent: () => undefined, onSession: (s) => sessions.push(s), onMalformed: () => undefined }),
    /RECONNECT/,
  );
  assert.deepEqual(sessions, [undefined], 'the session is reported gone');
});

test('an unknown connection token: HELLO code 40101 rejects with a permanent KookGatewayError', async () => {
  const url = (await rest().gatewayUrl(false)).replace(/token=[^&]+/, 'token=forged');
  const err = await KookSocket.connect({ url, onEvent: () => undefined, onMalformed: () => undefined }).catch((e: unknown) => e);
  assert.ok(err instanceof KookGatewayError, String(err));
  assert.equal(err.helloCode, 40101);
  assert.equal(err.permanent, true);
});
