import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { redisKeys } from '@conveyor/contracts';
import { CONNECTION_STATE_GRACE_MS, ConnectionLease, isLeaseLost } from './lease.js';
import { ConnectionStateStore, MAX_CONNECTION_STATE_BYTES } from './state.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
const keys = redisKeys(prefix);
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const Session = z.object({ sessionId: z.string(), seq: z.number().int() });
type Session = z.infer<typeof Session>;

const lease = (botId: string, ownerId: string, ttlMs = 10_000) => new ConnectionLease({ redis, prefix, botId, ownerId, ttlMs });
const store = (l: ConnectionLease, events: { invalid?: string[]; failed?: unknown[] } = {}) =>
  new ConnectionStateStore<Session>({
    redis, prefix, lease: l, schema: Session,
    onInvalid: (reason) => events.invalid?.push(reason),
    onWriteFailed: (err) => events.failed?.push(err),
  });

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('the holder stores and clears the state; the next holder reads what it stored', async () => {
  const a = lease('bot-a', 'replica-1');
  assert.equal(await a.acquire(), true);
  const mine = store(a);
  assert.equal(await mine.get(), undefined);
  await mine.put({ sessionId: 's1', seq: 7 });
  await a.release();
  const b = lease('bot-a', 'replica-2');
  assert.equal(await b.acquire(), true);
  const theirs = store(b);
  assert.deepEqual(await theirs.get(), { sessionId: 's1', seq: 7 });
  await theirs.clear();
  assert.equal(await theirs.get(), undefined);
});

test('a write with a stale fencing token is refused and leaves the new holder\'s state alone', async () => {
  const a = lease('bot-b', 'replica-1', 200);
  await a.acquire();
  const stale = store(a, { failed: [] });
  await stale.put({ sessionId: 'old', seq: 1 });
  const b = lease('bot-b', 'replica-2');
  await until('the lease to expire and be taken over', async () => b.acquire());
  await store(b).put({ sessionId: 'new', seq: 1 });
  // `a` still believes it holds the bot until Redis says otherwise.
  assert.notEqual(a.token, null);
  const failed: unknown[] = [];
  const paused = store(a, { failed });
  await assert.rejects(paused.put({ sessionId: 'old', seq: 99 }), (err) => isLeaseLost(err));
  await assert.rejects(paused.clear(), (err) => isLeaseLost(err));
  assert.equal(a.token, null, 'a refused write counts as the lease lost');
  assert.equal(failed.length, 2, 'each refusal reported');
  assert.deepEqual(await store(b).get(), { sessionId: 'new', seq: 1 });
});

test('a state over the size bound is refused with its code and nothing is written', async () => {
  const a = lease('bot-c', 'replica-1');
  await a.acquire();
  const failed: unknown[] = [];
  const s = store(a, { failed });
  await s.put({ sessionId: 'kept', seq: 1 });
  await assert.rejects(s.put({ sessionId: 'x'.repeat(MAX_CONNECTION_STATE_BYTES), seq: 2 }), (err: unknown) => err instanceof Error && 'code' in err && err.code === 'CONNECTION_STATE_TOO_LARGE');
  assert.equal(failed.length, 1);
  assert.deepEqual(await s.get(), { sessionId: 'kept', seq: 1 });
});

test('the state expires a grace after the lease: set on write, extended by each renewal', async () => {
  const ttlMs = 5_000;
  const a = lease('bot-d', 'replica-1', ttlMs);
  await a.acquire();
  await store(a).put({ sessionId: 's', seq: 1 });
  const key = keys.connectionState('bot-d');
  const afterWrite = await redis.pttl(key);
  assert.ok(afterWrite > ttlMs + CONNECTION_STATE_GRACE_MS - 2_000 && afterWrite <= ttlMs + CONNECTION_STATE_GRACE_MS, `expiry set on write: ${afterWrite} ms`);
  await redis.pexpire(key, 1_000);
  assert.equal(await a.renew(), true);
  const afterRenew = await redis.pttl(key);
  assert.ok(afterRenew > ttlMs + CONNECTION_STATE_GRACE_MS - 2_000, `expiry extended by the renewal: ${afterRenew} ms`);
  assert.ok(afterRenew > (await redis.pttl(keys.connectionLease('bot-d'))), 'the state outlives the lease');
});

test('a stored value the schema does not accept reads as nothing and is reported', async () => {
  const a = lease('bot-e', 'replica-1');
  await a.acquire();
  const invalid: string[] = [];
  await redis.set(keys.connectionState('bot-e'), JSON.stringify({ sessionId: 's', seq: 'not a number' }));
  assert.equal(await store(a, { invalid }).get(), undefined);
  await redis.set(keys.connectionState('bot-e'), '{not json');
  assert.equal(await store(a, { invalid }).get(), undefined);
  assert.equal(invalid.length, 2);
  assert.match(invalid[0], /seq/);
});
