import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { topology, type MessageChain, type ReplyRoute } from '@conveyor/contracts';
import { PlatformRejectedError, type DeliveryContext, type OpenConnection, type StreamSnapshot } from '@conveyor/platform-kit';
import { ConnectionLease } from './lease.js';
import { GatewayRelayAdapter, relayStreamId, serveGatewaySends } from './relay.js';
import { NATS_URL, useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
const topo = topology(prefix);
let redis: Redis;
let nc: NatsConnection;
const subs: Subscription[] = [];
before(async () => {
  redis = testRedis.redis();
  nc = await connect({ servers: NATS_URL });
});
after(async () => {
  for (const s of subs) s.unsubscribe();
  await nc.close();
});

const quiet = { warn: () => undefined };

/** A connection as the gateway holds it, recording what it was asked to send. */
function connection(behaviour: (message: MessageChain) => Promise<void> = async () => undefined) {
  const sent: MessageChain[] = [];
  const streams: Array<StreamSnapshot | undefined> = [];
  const open: OpenConnection = {
    ended: new Promise(() => undefined),
    close: async () => undefined,
    async send(_route, message, onWritten, stream) {
      onWritten?.();
      await behaviour(message);
      sent.push(message);
      streams.push(stream);
      return { messageId: String(sent.length) };
    },
  };
  return { open, sent, streams };
}

async function owner(botId: string, ownerId = 'gw-a') {
  const lease = new ConnectionLease({ redis, prefix, botId, ownerId, ttlMs: 30_000 });
  assert.equal(await lease.acquire(), true);
  return lease;
}

function serve(botId: string, lease: ConnectionLease, open: OpenConnection) {
  const sub = serveGatewaySends({ nc, topology: topo, redis, prefix, botId, lease, connection: open, logger: quiet });
  subs.push(sub);
  return sub;
}

const routeOf = (botId: string): ReplyRoute => ({ botId, adapter: 'onebot', sessionId: '42', launcherType: 'person', launcherId: '42', senderId: '42', replyTo: '7' });
const ctx = (partKey = '1:0:0'): DeliveryContext => ({
  queryId: randomUUID(), partKey, chunkOrdinal: 0, sequence: 1, timestamp: new Date(),
  state: { get: async () => null, set: async () => undefined },
});
const text = (t: string): MessageChain => [{ type: 'Plain', text: t }];
const adapter = (retryBudgetMs = 20_000) => new GatewayRelayAdapter('onebot', { nc, topology: topo, logger: quiet, requestTimeoutMs: 2_000, retryBudgetMs });

test('a part reaches the owner\'s connection once; the same part asked again is answered as sent, not sent twice', async () => {
  const botId = randomUUID();
  const { open, sent } = connection();
  serve(botId, await owner(botId), open);
  await nc.flush();
  const c = ctx();
  assert.deepEqual(await adapter().deliver(routeOf(botId), { message: text('hi'), isFinal: true, stream: false }, c), { delivered: true });
  assert.deepEqual(await adapter().deliver(routeOf(botId), { message: text('hi'), isFinal: true, stream: false }, c), { delivered: true });
  assert.equal(sent.length, 1);
});

test('streamed snapshots before the final part and empty replies are not sent (OneBot cannot edit)', async () => {
  const botId = randomUUID();
  const { open, sent } = connection();
  serve(botId, await owner(botId), open);
  await nc.flush();
  assert.deepEqual(await adapter().deliver(routeOf(botId), { message: text('par'), isFinal: false, stream: true }, ctx('1:0:0')), { delivered: true });
  assert.deepEqual(await adapter().deliver(routeOf(botId), { message: text(''), isFinal: true, stream: false }, ctx('1:1:0')), { delivered: true });
  assert.deepEqual(await adapter().deliver(routeOf(botId), { message: text('partial, whole'), isFinal: true, stream: true }, ctx('1:2:0')), { delivered: true });
  assert.deepEqual(sent, [text('partial, whole')]);
});

test('a platform that streams in place gets every snapshot of a reply, marked with one stream id and the last as final', async () => {
  const botId = randomUUID();
  const { open, sent, streams } = connection();
  serve(botId, await owner(botId), open);
  await nc.flush();
  const streaming = new GatewayRelayAdapter('wecombot', { nc, topology: topo, logger: quiet, requestTimeoutMs: 2_000, retryBudgetMs: 20_000, streamSnapshots: true });
  const queryId = randomUUID();
  const part = (partKey: string) => ({ ...ctx(partKey), queryId });
  assert.deepEqual(await streaming.deliver(routeOf(botId), { message: text(''), isFinal: false, stream: true }, part('1:0:0')), { delivered: true });
  assert.deepEqual(await streaming.deliver(routeOf(botId), { message: text('par'), isFinal: false, stream: true }, part('1:1:0')), { delivered: true });
  assert.deepEqual(await streaming.deliver(routeOf(botId), { message: text('partial'), isFinal: true, stream: true }, part('1:2:0')), { delivered: true });
  assert.deepEqual(await streaming.deliver(routeOf(botId), { message: text('whole'), isFinal: true, stream: false }, ctx('1:0:0')), { delivered: true });
  assert.deepEqual(sent, [text('par'), text('partial'), text('whole')], 'an empty snapshot before the end is not sent');
  const id = relayStreamId(queryId);
  assert.deepEqual(streams, [{ id, final: false }, { id, final: true }, undefined]);
});

test('with no owner the part waits for one (a takeover), and a replica that lost the bot sends nothing', async () => {
  const botId = randomUUID();
  const stale = connection();
  const staleLease = await owner(botId, 'gw-old');
  serve(botId, staleLease, stale.open);
  // Another replica takes the bot over; the stale one is still subscribed but fails its fencing check.
  await redis.del(`${prefix}:gw:{${botId}}:lease`);
  const fresh = connection();
  const delivering = adapter().deliver(routeOf(botId), { message: text('across the takeover'), isFinal: true, stream: false }, ctx());
  await new Promise((r) => setTimeout(r, 300));
  subs.pop()!.unsubscribe();
  serve(botId, await owner(botId, 'gw-new'), fresh.open);
  assert.deepEqual(await delivering, { delivered: true });
  assert.equal(stale.sent.length, 0, 'the stale owner sent nothing');
  assert.deepEqual(fresh.sent, [text('across the takeover')]);
});

test('a platform refusal fails at once; no owner within the retry budget fails with the reason', async () => {
  const botId = randomUUID();
  const { open } = connection(async () => { throw new PlatformRejectedError('send_msg failed (retcode 100)'); });
  serve(botId, await owner(botId), open);
  await nc.flush();
  const started = Date.now();
  const refused = await adapter().deliver(routeOf(botId), { message: text('no'), isFinal: true, stream: false }, ctx());
  assert.equal(refused.delivered, false);
  assert.match(refused.delivered ? '' : refused.reason, /rejected: send_msg failed/);
  assert.ok(Date.now() - started < 1_500, 'not retried');
  const nobody = await adapter(800).deliver(routeOf(randomUUID()), { message: text('anyone?'), isFinal: true, stream: false }, ctx());
  assert.equal(nobody.delivered, false);
  assert.match(nobody.delivered ? '' : nobody.reason, /no gateway replica holds the connection/);
});
