import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisFixedWindow } from './rate-window.js';
import { redisKeys } from '@conveyor/contracts';
import { SessionLeases } from './session-leases.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const s = { botId: 'b', adapter: 'http-bot' as const, launcherType: 'person', launcherId: 'x' };

test('fixed window: the limit holds within a window, denied requests do not count, the wait ends at the boundary', async () => {
  const a = new RedisFixedWindow(redis, prefix);
  const b = new RedisFixedWindow(redis, prefix);
  const got = [await a.require(s, 'k', 60, 2, 'q1'), await b.require(s, 'k', 60, 2, 'q2'), await a.require(s, 'k', 60, 2, 'q3')];
  assert.deepEqual(got.slice(0, 2), [{ allowed: true }, { allowed: true }], 'two replicas share one counter');
  assert.equal(got[2].allowed, false);
  assert.ok(!got[2].allowed && got[2].retryInMs > 0 && got[2].retryInMs <= 60_000);
  assert.deepEqual(await a.require(s, 'other', 60, 2, 'q4'), { allowed: true }, 'per key');
});

test('fixed window: a redelivered query is allowed again and counts once', async () => {
  const w = new RedisFixedWindow(redis, prefix);
  // A day-long window, so the test never straddles two buckets.
  assert.deepEqual(await w.require(s, 'redelivered', 86_400, 2, 'q1'), { allowed: true });
  assert.deepEqual(await w.require(s, 'redelivered', 86_400, 2, 'q1'), { allowed: true }, 'the same query again (its orchestrator died after the stage)');
  assert.deepEqual(await w.require(s, 'redelivered', 86_400, 2, 'q2'), { allowed: true }, 'the first counted once: room for another');
  assert.equal((await w.require(s, 'redelivered', 86_400, 2, 'q3')).allowed, false);
  assert.deepEqual(await w.require(s, 'redelivered', 86_400, 2, 'q2'), { allowed: true }, 'a counted query stays allowed in its window');
});

test('admission decides the rate window with the lease: counted once, a full window defers, the holder asking again is not counted twice', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  const window = new RedisFixedWindow(redis, prefix);
  const chat = { ...s, launcherId: `rate-${randomBytes(4).toString('hex')}` };
  // A day-long window, so the test never straddles two buckets.
  const rateWindow = { key: `b:p:person:${chat.launcherId}`, windowSeconds: 86_400, limit: 2 };
  const first = await leases.acquireTurn(chat, 'q1', 1, undefined, rateWindow);
  assert.equal(first.outcome, 'acquired');
  assert.ok(first.rate?.allowed, 'the first query of the window is allowed');
  assert.equal(first.rate.bucket.startsWith(redisKeys(prefix).rateLimitWindow(chat, rateWindow.key)), true, 'counted in the chat\'s window');
  assert.deepEqual(await leases.acquireTurn(chat, 'q1', 1, undefined, rateWindow), first, 'the holder (a redelivered copy) gets the same decision, counted once');
  assert.deepEqual(await window.require(chat, rateWindow.key, 86_400, 2, 'other-1'), { allowed: true }, 'room for one more: q1 counted once');
  await leases.finish(chat, 'q1');
  const full = await leases.acquireTurn(chat, 'q2', 2, undefined, rateWindow);
  assert.equal(full.outcome, 'acquired', 'a full window does not keep the query from its turn: the stage decides what to do');
  assert.ok(full.rate && !full.rate.allowed && full.rate.retryInMs > 0 && full.rate.retryInMs <= 86_400_000);
  assert.equal((await leases.acquireTurn(chat, 'q3', 3, undefined, rateWindow)).rate, undefined, 'no decision without the turn');
  const plainChat = { ...chat, launcherId: `${chat.launcherId}-plain` };
  const plain = await leases.acquireTurn(plainChat, 'p1', 1);
  assert.equal(plain.rate, undefined, 'no window asked, none decided');
  // The pipeline slots are shared by this file's tests.
  await leases.finish(chat, 'q2');
  await leases.finish(plainChat, 'p1');
});

test('a query that ends before its rate-limit stage gives its count back as it frees the session, and only its own', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  const window = new RedisFixedWindow(redis, prefix);
  const chat = { ...s, launcherId: `uncount-${randomBytes(4).toString('hex')}` };
  const rateWindow = { key: `b:p:person:${chat.launcherId}`, windowSeconds: 86_400, limit: 1 };
  const dropped = await leases.acquireTurn(chat, 'dropped', 1, undefined, rateWindow);
  assert.ok(dropped.rate?.allowed);
  assert.equal(await leases.finish(chat, 'dropped', dropped.rate.bucket), true);
  const next = await leases.acquireTurn(chat, 'next', 2, undefined, rateWindow);
  assert.ok(next.rate?.allowed, 'the window has room again');
  assert.equal(await leases.release(chat, 'next'), true, 'a release without a count to give back keeps the count');
  assert.equal((await window.require(chat, rateWindow.key, 86_400, 1, 'third')).allowed, false, 'the counted query still fills the window');
  await window.uncount(next.rate.bucket, 'next');
  assert.deepEqual(await window.require(chat, rateWindow.key, 86_400, 1, 'third'), { allowed: true }, 'given back on its own');
});

test('session leases: arrival order, one at a time, idempotent release, pipeline cap', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 50, pipelineCap: 2, staleMs: 60_000 });
  assert.equal(await leases.acquire(s, 'q2', 2), 'settling');
  assert.equal(await leases.acquire(s, 'q1', 1), 'settling', 'a lower sequence registered later still goes first');
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(await leases.acquire(s, 'q2', 2), 'not-head');
  assert.equal(await leases.acquire(s, 'q1', 1), 'acquired');
  assert.equal(await leases.acquire(s, 'q1', 1), 'acquired', 're-entrant for its holder');
  assert.equal(await leases.acquire(s, 'q2', 2), 'session-busy');
  assert.equal(await leases.release(s, 'q1'), true);
  assert.equal(await leases.release(s, 'q1'), false, 'a second release is a no-op');
  assert.equal(await leases.acquire(s, 'q2', 2), 'acquired');
  const other = (id: string) => ({ ...s, launcherId: id });
  await leases.acquire(other('y'), 'q3', 3);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(await leases.acquire(other('y'), 'q3', 3), 'acquired');
  await leases.acquire(other('z'), 'q4', 4);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(await leases.acquire(other('z'), 'q4', 4), 'pipeline-full', 'two queries hold the two slots');
  await leases.release(s, 'q2');
  assert.equal(await leases.acquire(other('z'), 'q4', 4), 'acquired');
});

test('a crashed holder frees the session by expiry', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 200, settleMs: 0, pipelineCap: 100, staleMs: 60_000 });
  const c = { ...s, launcherId: 'crash' };
  assert.equal(await leases.acquire(c, 'dead', 1), 'acquired');
  assert.equal(await leases.acquire(c, 'next', 2), 'session-busy');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await leases.acquire(c, 'next', 2), 'acquired');
});

test('a message registered by the ingress is settled at once and keeps its place by stream sequence', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 10_000, pipelineCap: 100, staleMs: 60_000 });
  const r = { ...s, launcherId: 'registered' };
  await leases.register(r, 'first', 10);
  await leases.register(r, 'second', 11);
  assert.equal(await leases.acquire(r, 'second', 11), 'not-head', 'the earlier message goes first');
  assert.equal(await leases.acquire(r, 'first', 10), 'acquired', 'no settle wait after registration');
  await leases.release(r, 'first');
  assert.equal(await leases.acquire(r, 'second', 11), 'acquired');
  const unregistered = { ...s, launcherId: 'unregistered' };
  assert.equal(await leases.acquire(unregistered, 'bus-only', 12), 'settling', 'a message that skipped the ingress still settles');
});

test('session leases: a query whose reply ended never takes the session again; a released one may retry', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  const session = { botId: 'b', adapter: 'http-bot' as const, launcherType: 'person', launcherId: `finish-${randomBytes(4).toString('hex')}` };
  await leases.register(session, 'done-1', 1);
  assert.equal(await leases.acquire(session, 'done-1', 1), 'acquired');
  assert.equal(await leases.finish(session, 'done-1'), true);
  // The same query delivered again (its ack was lost): it must not hold the session for its whole TTL.
  assert.equal(await leases.acquire(session, 'done-1', 1), 'finished');
  assert.equal(await leases.holder(session), null);
  await leases.register(session, 'retry-2', 2);
  assert.equal(await leases.acquire(session, 'retry-2', 2), 'acquired');
  assert.equal(await leases.release(session, 'retry-2'), true);
  assert.equal(await leases.acquire(session, 'retry-2', 2), 'acquired', 'a released query may run again (its retry)');
});

test('aggregation: the head waits out the delay after the newest stashed message, then takes the consecutive stashed messages once', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  const session = { ...s, launcherId: `agg-${randomBytes(4).toString('hex')}` };
  const agg = { delayMs: 300, maxMessages: 10, maxBytes: 10_000, ownBytes: 4 };
  for (const [i, id] of ['h', 'm2', 'm3', 'm4'].entries()) await leases.register(session, id, i + 1);
  // m3 is not stashed (its orchestrator has not seen it yet): the merge stops before it, m4 waits its turn.
  for (const id of ['h', 'm2', 'm4']) assert.equal(await leases.stash(session, id, `{"id":"${id}"}`, 20), true);
  assert.equal(await leases.stash(session, 'm2', '{"id":"again"}', 20), false, 'a redelivered copy is stashed once');

  const waiting = await leases.acquireTurn(session, 'h', 1, agg);
  assert.equal(waiting.outcome, 'aggregating');
  assert.ok(waiting.waitMs > 0 && waiting.waitMs <= 300, `waits the rest of the delay (${waiting.waitMs} ms)`);
  assert.equal((await leases.acquireTurn(session, 'm2', 2, agg)).outcome, 'not-head');
  assert.equal(await leases.holder(session), null, 'no lease is held while aggregating');

  await new Promise((r) => setTimeout(r, waiting.waitMs + 20));
  assert.deepEqual(await leases.acquireTurn(session, 'h', 1, agg), { outcome: 'acquired', waitMs: 0, merged: ['{"id":"m2"}'] });
  assert.deepEqual(await leases.acquireTurn(session, 'h', 1, agg), { outcome: 'acquired', waitMs: 0, merged: ['{"id":"m2"}'] }, 'a redelivered head runs the same merged query');
  assert.equal((await leases.acquireTurn(session, 'm2', 2, agg)).outcome, 'finished', 'the merged message is not answered again');
  assert.equal(await leases.stash(session, 'm2', '{"id":"m2"}', 20), false, 'nor stashed again');
  assert.equal((await leases.acquireTurn(session, 'm3', 3, agg)).outcome, 'session-busy');

  await leases.finish(session, 'h');
  assert.equal(await redis.exists(redisKeys(prefix).sessionAggregateMerged(session, 'h')), 0, 'what was merged is forgotten when the reply ends');
  // m3 heads now; the delay since the newest stash has passed, so it runs at once and merges m4 (stashed) after it.
  assert.equal(await leases.stash(session, 'm3', '{"id":"m3"}', 20), true);
  await new Promise((r) => setTimeout(r, 320));
  assert.deepEqual(await leases.acquireTurn(session, 'm3', 3, agg), { outcome: 'acquired', waitMs: 0, merged: ['{"id":"m4"}'] });
  await leases.finish(session, 'm3');
  assert.equal((await leases.acquireTurn(session, 'm4', 4, agg)).outcome, 'finished');
  assert.equal(await redis.hlen(redisKeys(prefix).sessionAggregatePending(session)), 0, 'nothing stays stashed');
});

test('aggregation: a full merge runs at once; the byte bound ends a merge; without aggregation nothing is merged', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  const full = { ...s, launcherId: `agg-full-${randomBytes(4).toString('hex')}` };
  for (let i = 1; i <= 4; i++) {
    await leases.register(full, `f${i}`, i);
    await leases.stash(full, `f${i}`, `"f${i}"`, 20);
  }
  // Three messages fill a merge of at most three: no waiting for the delay.
  assert.deepEqual(await leases.acquireTurn(full, 'f1', 1, { delayMs: 60_000, maxMessages: 3, maxBytes: 10_000, ownBytes: 4 }), { outcome: 'acquired', waitMs: 0, merged: ['"f2"', '"f3"'] });
  await leases.finish(full, 'f1');
  // f4 alone does not fill a merge, and the newest stash is recent: it waits.
  assert.equal((await leases.acquireTurn(full, 'f4', 4, { delayMs: 60_000, maxMessages: 3, maxBytes: 10_000, ownBytes: 4 })).outcome, 'aggregating');

  const bytes = { ...s, launcherId: `agg-bytes-${randomBytes(4).toString('hex')}` };
  for (let i = 1; i <= 3; i++) {
    await leases.register(bytes, `b${i}`, i);
    await leases.stash(bytes, `b${i}`, 'x'.repeat(40), 20);
  }
  // Room for one more 40-byte envelope after the head's own 50: the merge is full and runs at once.
  assert.deepEqual(await leases.acquireTurn(bytes, 'b1', 1, { delayMs: 60_000, maxMessages: 10, maxBytes: 100, ownBytes: 50 }), { outcome: 'acquired', waitMs: 0, merged: ['x'.repeat(40)] });

  const plain = { ...s, launcherId: `agg-off-${randomBytes(4).toString('hex')}` };
  await leases.register(plain, 'p1', 1);
  await leases.register(plain, 'p2', 2);
  await leases.stash(plain, 'p2', '"p2"', 20);
  assert.deepEqual(await leases.acquireTurn(plain, 'p1', 1), { outcome: 'acquired', waitMs: 0, merged: [] }, 'aggregation off: the head runs alone at once');
});
