import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { DEFAULT_KEY_LAYOUT, redisKeys, type RedisKeyLayout } from '@conveyor/contracts';
import { SessionLeases } from './session-leases.js';
import { throttledHolderCheck, TurnWakeups, waitForTurn, type WaitReason } from './session-turn.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
/** Longer than any test here may take: a wait that ends did so because of a notice, not its timer. */
const NEVER_MS = 10 * 60_000;
let redis: Redis;
const wakeupsToClose: TurnWakeups[] = [];
before(() => { redis = testRedis.redis(); });
after(async () => {
  for (const w of wakeupsToClose) w.close();
});

const session = (id: string) => ({ botId: 'b', adapter: 'http-bot' as const, launcherType: 'person' as const, launcherId: id, sessionId: id, senderId: id, replyTo: 'm' });

async function subscribed(layout: RedisKeyLayout = DEFAULT_KEY_LAYOUT): Promise<TurnWakeups> {
  // No fallback recheck within the test: only a notice can end a wait.
  const wakeups = new TurnWakeups(redis.duplicate(), prefix, { fallbackRecheckMs: NEVER_MS, layout });
  wakeupsToClose.push(wakeups);
  await wakeups.start();
  return wakeups;
}

test('a notice wakes every waiter of its session and the longest-waiting slot waiter, no one else', async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const never = new AbortController().signal;
  const woke: string[] = [];
  const track = (name: string, p: Promise<void>) => p.then(() => woke.push(name));
  const wait = (id: string, reason: WaitReason) => wakeups.wait(wakeups.ask(session(id)), reason, NEVER_MS, never);
  const a1 = track('a1', wait('a', 'session'));
  const a2 = track('a2', wait('a', 'slot'));
  const slotOld = track('slot-old', wait('b', 'slot'));
  track('slot-new', wait('c', 'slot'));
  track('busy-d', wait('d', 'session'));
  wakeups.freed(redisKeys(prefix).sessionLease(session('a')));
  await Promise.all([a1, a2, slotOld]);
  assert.deepEqual(woke.sort(), ['a1', 'a2', 'slot-old']);
  assert.equal(wakeups.waiting, 2, 'the newer slot waiter and the other session still wait');
  wakeups.close();
  assert.equal(wakeups.waiting, 0, 'closing wakes everyone');
});

test('a notice that came while the query asked is not missed: the wait returns at once', async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const never = new AbortController().signal;
  const own = wakeups.ask(session('e'));
  const slot = wakeups.ask(session('e2'));
  const settling = wakeups.ask(session('e3'));
  wakeups.freed(redisKeys(prefix).sessionLease(session('e')));
  wakeups.registered(redisKeys(prefix).sessionLease(session('e3')));
  await wakeups.wait(own, 'session', NEVER_MS, never);
  await wakeups.wait(slot, 'slot', NEVER_MS, never);
  await wakeups.wait(settling, 'settling', NEVER_MS, never);
  assert.equal(wakeups.waiting, 0);
});

test("another session's notices during an ask do not send a session's waiter back to ask again", async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const never = new AbortController().signal;
  const busy = wakeups.ask(session('v'));
  const settling = wakeups.ask(session('w'));
  wakeups.freed(redisKeys(prefix).sessionLease(session('x')));
  wakeups.registered(redisKeys(prefix).sessionLease(session('x')));
  let returned = 0;
  void wakeups.wait(busy, 'session', NEVER_MS, never).then(() => returned++);
  void wakeups.wait(settling, 'settling', NEVER_MS, never).then(() => returned++);
  await new Promise((r) => setImmediate(r));
  assert.equal(returned, 0);
  assert.equal(wakeups.waiting, 2, 'both still wait');
  wakeups.close();
  await waitUntil(() => returned === 2);
});

test('a slot freed while queries asked sends one of them back to ask, the others wait for the next', async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const never = new AbortController().signal;
  const asks = ['sa', 'sb', 'sc'].map((id) => wakeups.ask(session(id)));
  wakeups.freed(redisKeys(prefix).sessionLease(session('s-other')));
  let returned = 0;
  for (const ask of asks) void wakeups.wait(ask, 'slot', NEVER_MS, never).then(() => returned++);
  await waitUntil(() => returned === 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(returned, 1, 'one freed slot, one query asks again');
  assert.equal(wakeups.waiting, 2);
  wakeups.freed(redisKeys(prefix).sessionLease(session('s-other')));
  await waitUntil(() => returned === 2);
  assert.equal(wakeups.waiting, 1, 'the next freed slot wakes one more');
  wakeups.close();
  await waitUntil(() => returned === 3);
});

test('slot waiters are woken in the order they first found the pipeline full, not the order they came back in', async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const never = new AbortController().signal;
  const woke: string[] = [];
  const now = Date.now();
  // The later one to wait first found the pipeline full earlier: it went to ask again after a notice.
  void wakeups.wait(wakeups.ask(session('so-newer')), 'slot', NEVER_MS, never, now).then(() => woke.push('newer'));
  void wakeups.wait(wakeups.ask(session('so-older')), 'slot', NEVER_MS, never, now - 5_000).then(() => woke.push('older'));
  wakeups.freed(redisKeys(prefix).sessionLease(session('so-other')));
  await waitUntil(() => woke.length === 1);
  assert.deepEqual(woke, ['older']);
  wakeups.freed(redisKeys(prefix).sessionLease(session('so-other')));
  await waitUntil(() => woke.length === 2);
  assert.deepEqual(woke, ['older', 'newer']);
});

test('an ask that ends without a wait leaves nothing behind', async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const ask = wakeups.ask(session('y'));
  wakeups.endAsk(ask);
  wakeups.freed(redisKeys(prefix).sessionLease(session('y')));
  assert.equal(ask.ownNotices, 0, 'an ended ask is told nothing more');
  assert.equal(wakeups.asks, 0);
});

/** Two messages of session `s`: the second waits for the first's turn, and only the release's notice can end its wait. */
async function finishingWakesTheNext(s: ReturnType<typeof session>, layout: RedisKeyLayout = DEFAULT_KEY_LAYOUT): Promise<void> {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 60_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 }, layout);
  const wakeups = await subscribed(layout);
  await leases.register(s, 'first', 1);
  await leases.register(s, 'second', 2);
  assert.equal(await leases.acquire(s, 'first', 1), 'acquired');
  // Held for ten minutes unless a notice ends the wait: only the release's notice can make it return.
  const turn = waitForTurn(leases, wakeups, s, 'second', 2, NEVER_MS, new AbortController().signal);
  await waitUntil(() => wakeups.waiting === 1);
  assert.equal(await leases.finish(s, 'first'), true);
  assert.deepEqual(await turn, { outcome: 'acquired', merged: [] });
  await leases.finish(s, 'second');
}

test('finishing a reply wakes the query waiting for that session at once, across connections', () => finishingWakesTheNext(session('f')));

test('with the pipeline cap split into shards, finishing a reply wakes the query waiting for that session at once', () => {
  const layout = { pipelineShards: 4 };
  // A session of a shard other than the first: its keys carry another hash tag than with one shard.
  const s = Array.from({ length: 64 }, (_, i) => session(`sharded-${i}`)).find((c) => redisKeys(prefix, layout).pipelineShard(c) !== 0)!;
  return finishingWakesTheNext(s, layout);
});

test('a freed pipeline slot wakes a query of another session waiting for one', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 60_000, settleMs: 0, pipelineCap: 1, staleMs: 60_000 });
  const wakeups = await subscribed();
  const [g, h] = [session('g'), session('h')];
  const slots = redisKeys(prefix).pipelineSlots(g);
  await redis.del(slots);
  await leases.register(g, 'holder', 1);
  await leases.register(h, 'waiter', 2);
  assert.equal(await leases.acquire(g, 'holder', 1), 'acquired');
  const turn = waitForTurn(leases, wakeups, h, 'waiter', 2, NEVER_MS, new AbortController().signal);
  await waitUntil(() => wakeups.waiting === 1);
  assert.equal(await leases.finish(g, 'holder'), true);
  assert.deepEqual(await turn, { outcome: 'acquired', merged: [] });
  await leases.finish(h, 'waiter');
  await redis.del(slots);
});

test('a registration wakes only the settling waiters of its session', async () => {
  const wakeups = new TurnWakeups(redis.duplicate(), prefix);
  wakeupsToClose.push(wakeups);
  const never = new AbortController().signal;
  const settling = wakeups.wait(wakeups.ask(session('r')), 'settling', NEVER_MS, never);
  void wakeups.wait(wakeups.ask(session('r')), 'session', NEVER_MS, never);
  void wakeups.wait(wakeups.ask(session('s')), 'slot', NEVER_MS, never);
  wakeups.registered(redisKeys(prefix).sessionLease(session('r')));
  await settling;
  assert.equal(wakeups.waiting, 2, 'the session and slot waiters still wait');
  wakeups.close();
});

/** Counts the acquire calls, the Redis round trips a wait costs. */
function counting(leases: SessionLeases): { leases: SessionLeases; asks: () => number } {
  let asks = 0;
  const acquireTurn = leases.acquireTurn.bind(leases);
  leases.acquireTurn = (...args) => {
    asks++;
    return acquireTurn(...args);
  };
  return { leases, asks: () => asks };
}

test('a query the orchestrator saw before the ingress registered it runs once registered, without asking in a loop', async () => {
  // Settling for ten minutes: only the registration's notice can let it run within the test.
  const { leases, asks } = counting(new SessionLeases(redis, prefix, { ttlMs: 60_000, settleMs: NEVER_MS, pipelineCap: 20, staleMs: 60_000 }));
  const wakeups = await subscribed();
  const s = session('t');
  const turn = waitForTurn(leases, wakeups, s, 'early', 7, NEVER_MS, new AbortController().signal);
  await waitUntil(() => wakeups.waiting === 1);
  await leases.register(s, 'early', 7);
  assert.deepEqual(await turn, { outcome: 'acquired', merged: [] });
  assert.equal(asks(), 2, 'asked once settling and once after the notice');
  await leases.finish(s, 'early');
});

test('a query no one registers waits out the settle time in one wait', async () => {
  const { leases, asks } = counting(new SessionLeases(redis, prefix, { ttlMs: 60_000, settleMs: 400, pipelineCap: 20, staleMs: 60_000 }));
  const wakeups = await subscribed();
  const s = session('u');
  const started = Date.now();
  assert.deepEqual(await waitForTurn(leases, wakeups, s, 'bus-only', 3, NEVER_MS, new AbortController().signal), { outcome: 'acquired', merged: [] });
  assert.ok(Date.now() - started >= 390, 'it settled first');
  assert.ok(asks() <= 3, `asked ${asks()} times`);
  await leases.finish(s, 'bus-only');
});

test('a waiter ends the turn of a holder whose run ended for good (a lease a failover brought back), and only then', async () => {
  const leases = new SessionLeases(redis, prefix, { ttlMs: 60_000, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  const wakeups = await subscribed();
  const s = session('stale-holder');
  await leases.register(s, 'rolled-back', 1);
  await leases.register(s, 'next', 2);
  assert.equal(await leases.acquire(s, 'rolled-back', 1), 'acquired');
  const asked: string[] = [];
  const ended: string[] = [];
  let runEnded = false;
  const holders = throttledHolderCheck(async (q) => { asked.push(q); return runEnded; }, 50, (q) => ended.push(q));
  // While the holder's run has not ended the waiter waits (and asks once per interval, not per recheck).
  await assert.rejects(waitForTurn(leases, wakeups, s, 'next', 2, 300, new AbortController().signal, { holders }), /session busy/);
  assert.ok(asked.length >= 1 && asked.every((q) => q === 'rolled-back'));
  assert.equal(await leases.holder(s), 'rolled-back');
  runEnded = true;
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(await waitForTurn(leases, wakeups, s, 'next', 2, NEVER_MS, new AbortController().signal, { holders }), { outcome: 'acquired', merged: [] });
  assert.deepEqual(ended, ['rolled-back']);
  assert.equal(await leases.acquire(s, 'rolled-back', 1), 'finished', 'the ended holder is remembered as finished');
  await leases.finish(s, 'next');
});

async function waitUntil(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a query that comes while another of this process waits for a slot queues behind it without asking', async () => {
  const { leases, asks } = counting(new SessionLeases(redis, prefix, { ttlMs: 60_000, settleMs: 0, pipelineCap: 1, staleMs: 60_000 }));
  const wakeups = await subscribed();
  const [holder, first, second] = [session('nq-holder'), session('nq-first'), session('nq-second')];
  const slots = redisKeys(prefix).pipelineSlots(holder);
  await redis.del(slots);
  await leases.register(holder, 'holder', 1);
  await leases.register(first, 'first', 2);
  await leases.register(second, 'second', 3);
  assert.equal(await leases.acquire(holder, 'holder', 1), 'acquired');
  const held = asks();
  const signal = new AbortController().signal;
  const firstTurn = waitForTurn(leases, wakeups, first, 'first', 2, NEVER_MS, signal);
  await waitUntil(() => wakeups.waiting === 1);
  assert.equal(asks() - held, 1, 'the first found the pipeline full');
  let secondDone = false;
  const secondTurn = waitForTurn(leases, wakeups, second, 'second', 3, NEVER_MS, signal).then((t) => ((secondDone = true), t));
  await waitUntil(() => wakeups.waiting === 2);
  assert.equal(asks() - held, 1, 'the second waits behind it without asking');
  assert.equal(await leases.finish(holder, 'holder'), true);
  assert.deepEqual(await firstTurn, { outcome: 'acquired', merged: [] });
  assert.equal(secondDone, false, 'the freed slot was the first\'s');
  assert.equal(await leases.finish(first, 'first'), true);
  assert.deepEqual(await secondTurn, { outcome: 'acquired', merged: [] });
  assert.equal(asks() - held, 3, 'one ask each once woken, and the first\'s that found the pipeline full');
  await leases.finish(second, 'second');
  await redis.del(slots);
});

test('with the cap split into shards, a freed slot wakes the longest-waiting query of its shard, and only its shard queues newcomers', async () => {
  const layout = { pipelineShards: 2 };
  const keys = redisKeys(prefix, layout);
  const wakeups = new TurnWakeups(redis.duplicate(), prefix, { fallbackRecheckMs: NEVER_MS, layout });
  wakeupsToClose.push(wakeups);
  const candidates = Array.from({ length: 64 }, (_, i) => session(`shard-${i}`));
  const [a0, b0] = candidates.filter((c) => keys.pipelineShard(c) === 0);
  const [a1, b1] = candidates.filter((c) => keys.pipelineShard(c) === 1);
  const never = new AbortController().signal;
  const woke: string[] = [];
  const now = Date.now();
  void wakeups.wait(wakeups.ask(a1), 'slot', NEVER_MS, never, now - 5_000).then(() => woke.push('shard 1, older'));
  void wakeups.wait(wakeups.ask(a0), 'slot', NEVER_MS, never, now).then(() => woke.push('shard 0, newer'));
  assert.equal(wakeups.slotQueued(b0), true);
  assert.equal(wakeups.slotQueued(b1), true);
  wakeups.freed(keys.sessionLease(b0));
  await waitUntil(() => woke.length === 1);
  assert.deepEqual(woke, ['shard 0, newer']);
  assert.equal(wakeups.slotQueued(b0), false, 'no one of shard 0 waits now');
  assert.equal(wakeups.slotQueued(b1), true);
  wakeups.close();
});
