import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { PermanentError, redisKeys, RetryableError, type ReplyRoute } from '@conveyor/contracts';
import { SessionLeases } from './session-leases.js';
import { TurnWakeups } from './session-turn.js';
import { QueryTurns, type QueryTurnRequest, type TurnEnd } from './query-turn.js';
import { RedisFixedWindow } from './rate-window.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
const keys = redisKeys(prefix);
const TTL_MS = 1_500;
let redis: Redis;
let leases: SessionLeases;
let wakeups: TurnWakeups;
let turns: QueryTurns;
let window: RedisFixedWindow;

before(async () => {
  redis = testRedis.redis();
  leases = new SessionLeases(redis, prefix, { ttlMs: TTL_MS, settleMs: 0, pipelineCap: 20, staleMs: 60_000 });
  wakeups = new TurnWakeups(redis.duplicate(), prefix);
  await wakeups.start();
  window = new RedisFixedWindow(redis, prefix);
  turns = new QueryTurns(leases, wakeups, window, { holdMs: 30_000, refreshEveryMs: TTL_MS / 5 });
});
after(async () => {
  wakeups.close();
});

let seq = 0;
function session(): ReplyRoute {
  const id = randomUUID();
  return { botId: 'b', adapter: 'http-bot', sessionId: id, launcherType: 'person', launcherId: id, senderId: id, replyTo: 'm' };
}
function request(route: ReplyRoute, queryId: string, extra: Partial<QueryTurnRequest> = {}): QueryTurnRequest {
  return { route, queryId, streamSeq: ++seq, signal: new AbortController().signal, lastDelivery: false, ...extra };
}
const ends = (end: TurnEnd) => async () => end;

async function until(cond: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('work that ends frees the session for good; the lease is kept alive past its TTL while the work runs', async () => {
  const route = session();
  const started = Date.now();
  const outcome = await turns.run(request(route, 'q1'), async () => {
    assert.equal(await leases.holder(route), 'q1', 'the work runs holding the session');
    // Longer than the lease's TTL: only the refresh keeps it.
    await until(() => Date.now() - started > TTL_MS * 2, 'twice the lease TTL');
    assert.equal(await leases.holder(route), 'q1', 'still held after twice its TTL');
    return 'ended';
  });
  assert.deepEqual(outcome, { kind: 'ran', end: 'ended' });
  assert.equal(await leases.holder(route), null);
  assert.deepEqual(await turns.run(request(route, 'q1'), ends('ended')), { kind: 'finished' }, 'a redelivered copy does not run again');
});

test('a handed-off or replied turn keeps the session until the reply ends elsewhere; the next message waits for that', async () => {
  for (const end of ['handed-off', 'replied'] as const) {
    const route = session();
    assert.deepEqual(await turns.run(request(route, 'first'), ends(end)), { kind: 'ran', end });
    assert.equal(await leases.holder(route), 'first', `${end}: the session stays held`);
    let secondRan = false;
    const second = turns.run(request(route, 'second'), async () => {
      secondRan = true;
      return 'ended';
    });
    // The second waits (no timer would end its wait within the test); the dispatcher's finish wakes it.
    await until(async () => (await redis.zcard(keys.sessionQueue(route))) === 1 || secondRan, 'the second message queued');
    assert.equal(secondRan, false, `${end}: the next message of the session waits`);
    await leases.finish(route, 'first');
    assert.deepEqual(await second, { kind: 'ran', end: 'ended' });
  }
});

test('a deferral keeps the lease; another failure frees the session without finishing it, so a retry runs', async () => {
  const route = session();
  await assert.rejects(turns.run(request(route, 'q'), async () => {
    throw new RetryableError(1_000, 'rate limited');
  }), RetryableError);
  assert.equal(await leases.holder(route), 'q', 'a deferred query keeps its lease and place');
  await assert.rejects(turns.run(request(route, 'q'), async () => {
    throw new Error('database down');
  }), /database down/);
  assert.equal(await leases.holder(route), null, 'freed');
  assert.deepEqual(await turns.run(request(route, 'q'), ends('ended')), { kind: 'ran', end: 'ended' }, 'the retry takes the session again');
});

test('a failure for good tells `abandoned` (a permanent error, or any error on the last delivery); a failure after the hand-off frees nothing', async () => {
  const route = session();
  const told: string[] = [];
  await assert.rejects(turns.run(request(route, 'p', { abandoned: async () => void told.push('permanent') }), async () => {
    throw new PermanentError('bad');
  }), PermanentError);
  await assert.rejects(turns.run(request(route, 'l', { lastDelivery: true, abandoned: async () => void told.push('last') }), async () => {
    throw new Error('boom');
  }), /boom/);
  await assert.rejects(turns.run(request(route, 'r', { abandoned: async () => void told.push('retried') }), async () => {
    throw new Error('boom');
  }), /boom/);
  assert.deepEqual(told, ['permanent', 'last'], 'an error with deliveries left is not the end');
  assert.equal(await leases.holder(route), null);

  await assert.rejects(turns.run(request(route, 'h', { lastDelivery: true, abandoned: async () => void told.push('handed') }), async (_merged, control) => {
    control.handedOff();
    throw new Error('after the publish');
  }), /after the publish/);
  assert.equal(await leases.holder(route), 'h', 'the run is on its way: the session stays held for its reply');
  assert.deepEqual(told, ['permanent', 'last']);
  await leases.finish(route, 'h');
});

test('a wait that runs out goes back to the bus, or is published again when the request says how', async () => {
  const route = session();
  const short = new QueryTurns(leases, wakeups, window, { holdMs: 200, refreshEveryMs: TTL_MS / 5 });
  assert.deepEqual(await short.run(request(route, 'holder'), ends('handed-off')), { kind: 'ran', end: 'handed-off' });
  await assert.rejects(short.run(request(route, 'waiter'), ends('ended')), RetryableError);
  let requeued = 0;
  assert.deepEqual(await short.run(request(route, 'waiter', { requeue: async () => void requeued++ }), ends('ended')), { kind: 'requeued' });
  assert.equal(requeued, 1);
  assert.equal(await leases.holder(route), 'holder');
  await leases.finish(route, 'holder');
});

test('with aggregation the message is stashed, and the head runs with the messages merged into it', async () => {
  const route = session();
  const turn = { delayMs: 1, maxMessages: 5, maxBytes: 10_000, ownBytes: 10 };
  // The first holds the session while two more arrive and are stashed behind it.
  assert.deepEqual(await turns.run(request(route, 'a'), ends('handed-off')), { kind: 'ran', end: 'handed-off' });
  const seen: (readonly string[])[] = [];
  const b = turns.run(request(route, 'b', { aggregation: { turn, stash: { envelopeJson: '{"b":1}', maxPending: 10 } } }), async (merged) => {
    seen.push(merged);
    return 'ended';
  });
  const c = turns.run(request(route, 'c', { aggregation: { turn, stash: { envelopeJson: '{"c":1}', maxPending: 10 } } }), async (merged) => {
    seen.push(merged);
    return 'ended';
  });
  await until(async () => (await redis.hlen(keys.sessionAggregatePending(route))) === 2 && (await redis.zcard(keys.sessionQueue(route))) === 2, 'both stashed and queued');
  await leases.finish(route, 'a');
  const outcomes = await Promise.all([b, c]);
  assert.deepEqual(outcomes, [{ kind: 'ran', end: 'ended' }, { kind: 'finished' }], 'c was merged into b and does not run again');
  assert.deepEqual(seen, [['{"c":1}']]);
});

test('the rate-limit stage gets admission\'s decision; a query that leaves before the stage gives the count back, however it leaves', async () => {
  // A day-long window of one request, so the test never straddles two buckets.
  const windowOf = (route: ReplyRoute) => ({ key: `b:p:person:${route.launcherId}`, windowSeconds: 86_400, limit: 1 });
  const roomLeft = async (route: ReplyRoute) => (await window.require(route, windowOf(route).key, 86_400, 1, `probe-${randomUUID()}`)).allowed;

  const asked = session();
  const outcome = await turns.run(request(asked, 'asked', { rateWindow: windowOf(asked) }), async (_merged, control) => {
    assert.deepEqual(await control.rateWindow.require(windowOf(asked).key, 86_400, 1, 'asked'), { allowed: true });
    return 'handed-off';
  });
  assert.deepEqual(outcome, { kind: 'ran', end: 'handed-off' });
  assert.equal(await roomLeft(asked), false, 'a query that reached the stage keeps its count');

  for (const [how, end] of [['ended', 'ended'], ['replied', 'replied'], ['failed', undefined]] as const) {
    const route = session();
    const run = turns.run(request(route, `left-${how}`, { rateWindow: windowOf(route) }), async () => {
      if (!end) throw new Error('the stages failed');
      return end;
    });
    if (end) await run;
    else await assert.rejects(run, /the stages failed/);
    assert.equal(await roomLeft(route), true, `a query that ${how} before its stage gave its count back`);
  }

  const full = session();
  await window.require(full, windowOf(full).key, 86_400, 1, 'earlier');
  await turns.run(request(full, 'over', { rateWindow: windowOf(full) }), async (_merged, control) => {
    const decision = await control.rateWindow.require(windowOf(full).key, 86_400, 1, 'over');
    assert.ok(!decision.allowed && decision.retryInMs > 0, 'a full window defers, as admission found it');
    return 'replied';
  });

  const changed = session();
  await turns.run(request(changed, 'changed', { rateWindow: windowOf(changed) }), async (_merged, control) => {
    // The pipeline's settings changed between admission and the stage: the stage's own question goes
    // to Redis, where the bucket already holds the query once.
    assert.deepEqual(await control.rateWindow.require(windowOf(changed).key, 86_400, 5, 'changed'), { allowed: true });
    return 'handed-off';
  });
  assert.equal(await roomLeft(changed), false, 'the query that asked keeps its count (made at admission)');
});

test('a best-effort step that fails is reported with its query, and the turn still ends as the work said', async () => {
  const failures: { step: string; queryId: string; err: unknown }[] = [];
  // The window's own connection is closed, so giving a count back fails; the lease steps still work.
  const closed = testRedis.client();
  closed.disconnect();
  const reporting = new QueryTurns(leases, wakeups, new RedisFixedWindow(closed, prefix), {
    holdMs: 30_000,
    refreshEveryMs: TTL_MS / 5,
    onStepFailed: (step, queryId, err) => failures.push({ step, queryId, err }),
  });
  const route = session();
  const rateWindow = { key: `b:p:person:${route.launcherId}`, windowSeconds: 86_400, limit: 5 };
  const outcome = await reporting.run(request(route, 'uncount-fails', { rateWindow }), ends('replied'));
  assert.deepEqual(outcome, { kind: 'ran', end: 'replied' });
  assert.deepEqual(failures.map((f) => [f.step, f.queryId]), [['uncount', 'uncount-fails']]);
  assert.ok(failures[0]!.err instanceof Error);
});

test('a query dropped before its turn leaves the queue at once: the message behind it does not wait for it', async () => {
  const route = session();
  assert.deepEqual(await turns.run(request(route, 'holder'), ends('handed-off')), { kind: 'ran', end: 'handed-off' });
  // The ingress registered both, in arrival order, while the holder's reply was still going out.
  const droppedSeq = ++seq;
  await leases.register(route, 'dropped', droppedSeq);
  const behind = request(route, 'behind');
  await leases.register(route, 'behind', behind.streamSeq);
  let behindRan = false;
  const running = turns.run(behind, async () => {
    behindRan = true;
    return 'ended';
  });
  await turns.skip(route, 'dropped');
  assert.equal(await redis.zscore(keys.sessionQueue(route), 'dropped'), null, 'the dropped message left the queue');
  assert.equal(behindRan, false, 'the holder\'s reply still goes out');
  await leases.finish(route, 'holder');
  // Without the skip the dropped message would head the queue until it went stale (a minute here).
  assert.deepEqual(await running, { kind: 'ran', end: 'ended' });
  assert.equal(await redis.zcard(keys.sessionQueue(route)), 0);
  assert.deepEqual(await turns.run(request(route, 'dropped', { streamSeq: droppedSeq }), ends('ended')), { kind: 'finished' }, 'a copy of it never takes the session');
});

test('a registration that lands after the drop does not queue the message; one an older replica queued is passed over', async () => {
  const route = session();
  await turns.skip(route, 'dropped-first');
  await leases.register(route, 'dropped-first', ++seq);
  assert.equal(await redis.zscore(keys.sessionQueue(route), 'dropped-first'), null, 'the register script refuses a finished message');
  assert.deepEqual(await turns.run(request(route, 'next'), ends('ended')), { kind: 'ran', end: 'ended' });

  // What a replica whose register script predates that check leaves: the finished message queued and just seen.
  const ghost = session();
  await turns.skip(ghost, 'ghost');
  await redis.zadd(keys.sessionQueue(ghost), ++seq, 'ghost');
  await redis.hset(keys.sessionFirstSeen(ghost), 'ghost', 0);
  await redis.hset(keys.sessionLastSeen(ghost), 'ghost', Date.now());
  let ran = false;
  const outcome = await turns.run(request(ghost, 'after-ghost'), async () => {
    ran = true;
    return 'ended';
  });
  assert.deepEqual([outcome, ran], [{ kind: 'ran', end: 'ended' }, true], 'admission passes over a finished head at once');
  assert.equal(await redis.zcard(keys.sessionQueue(ghost)), 0);
});
