import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Deliverer, type BotConfigs, type ReplyRef } from '@conveyor/delivery';
import { MatrixAdapter } from '@conveyor/matrix';
import { topology, type ReplyRoute } from '@conveyor/contracts';
import type { DeliveryContext } from '@conveyor/platform-kit';
import { startFakeMatrix, type FakeMatrix } from '../fakes/index.js';
import { NATS_URL, REDIS_URL } from '../harness/system.js';

/** The Matrix outbound against the fake homeserver: one message replaced as LangBot's edited streams are, and sends made again shown once. */
const prefix = `t${randomBytes(5).toString('hex')}`;
const BOT = { token: 'matrix-streaming-token', userId: '@conveyor:hs.test', displayName: 'Conveyor' };
const ALICE = '@alice:hs.test';
let redis: Redis;
let nc: NatsConnection;
let hs: FakeMatrix;
let adapter: MatrixAdapter;

before(async () => {
  redis = new Redis(REDIS_URL);
  nc = await connect({ servers: NATS_URL });
  hs = await startFakeMatrix({ users: [BOT] });
  const configs: BotConfigs = { get: async () => ({ adapter: 'matrix', adapterConfig: { homeserver_url: hs.url, user_id: BOT.userId, access_token: BOT.token, 'enable-stream-reply': true } }) };
  adapter = new MatrixAdapter({ redis, prefix, topology: topology(prefix), nc, configs, logger: { warn: () => undefined } });
});
after(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await nc.close();
  await hs.close();
});

const routeTo = (room: string): ReplyRoute => ({ botId: 'mx', adapter: 'matrix', sessionId: room, launcherType: 'person', launcherId: room, senderId: ALICE, replyTo: '$asked' });

test('a streamed Matrix reply: sent with the first snapshot, replaced with the 9th and 17th, the final replacement whole; past 16,000 characters more messages', async () => {
  const room = hs.createRoom([BOT.userId, ALICE]);
  const route = routeTo(room);
  const d = new Deliverer({ redis, prefix, adapters: [adapter] });
  const q = randomUUID();
  let text = '';
  for (let i = 0; i < 20; i++) {
    text += `t${i} `;
    if (i === 19) text += 'x'.repeat(20_000);
    const ref: ReplyRef = { queryId: q, attempt: 1, seq: i, route };
    await d.withReplyRef(ref, () => d.send(route, { message: [{ type: 'Plain', text }], isFinal: i === 19, stream: true }));
    await d.idle();
  }
  await d.withReplyRef({ queryId: q, attempt: 1, seq: 20, route, terminal: true }, async () => undefined);
  await d.idle();
  const events = hs.sent().filter((e) => e.roomId === room);
  assert.equal(events[0]!.content.body, 't0 ');
  assert.deepEqual(events[0]!.content['m.relates_to'], { 'm.in_reply_to': { event_id: '$asked' } }, 'a reply to the user\'s message');
  const edits = events.filter((e) => e.content['m.relates_to']?.rel_type === 'm.replace').map((e) => String(e.content['m.new_content'].body));
  assert.deepEqual(edits.slice(0, 2).map((t) => t.trim().split(' ').length), [9, 17], 'LangBot\'s rhythm: every 8th snapshot');
  assert.equal(edits.length, 3);
  const shown = hs.shown(room);
  assert.equal(shown.length, 2, 'the rest past 16,000 characters in a second message');
  assert.ok(shown.every((m) => m.body.length <= 16_000));
  assert.equal(shown.map((m) => m.body).join(''), text);
});

test('a whole reply part delivered twice (a dispatcher crash after the send) is shown once: the transaction ids are the part\'s', async () => {
  const room = hs.createRoom([BOT.userId, ALICE]);
  const state = new Map<string, string>();
  const ctx: DeliveryContext = {
    queryId: randomUUID(), partKey: '1:0:0', chunkOrdinal: 1, sequence: 1, timestamp: new Date(),
    state: { get: async (k) => state.get(k) ?? null, set: async (k, v) => void state.set(k, v) },
  };
  const reply = { message: [{ type: 'Plain' as const, text: `${'long '.repeat(4_000)}end` }], isFinal: true, stream: false };
  assert.deepEqual(await adapter.deliver(routeTo(room), reply, ctx), { delivered: true });
  assert.deepEqual(await adapter.deliver(routeTo(room), reply, ctx), { delivered: true });
  const puts = hs.calls.filter((c) => c.method === 'PUT' && c.path.includes(encodeURIComponent(room)));
  assert.equal(puts.length, 4, 'two pieces, each sent twice');
  assert.equal(hs.shown(room).length, 2, 'shown once: two pieces of one reply');
  // Cut at a space, which the cut takes out.
  assert.equal(hs.shown(room).map((m) => m.body).join(' '), reply.message[0]!.text);
  const other = await adapter.deliver(routeTo(room), reply, { ...ctx, partKey: '2:0:0' });
  assert.deepEqual(other, { delivered: true });
  assert.equal(hs.shown(room).length, 4, 'another part (a new attempt) is a new message');
});
