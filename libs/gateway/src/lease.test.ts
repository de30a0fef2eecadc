import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { ConnectionLease, isLeaseLost, readConnectionLease } from './lease.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const lease = (botId: string, ownerId: string, ttlMs = 10_000) => new ConnectionLease({ redis, prefix, botId, ownerId, ttlMs });

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('only one owner holds a bot; acquiring again as the holder keeps the same token', async () => {
  const a = lease('bot-one', 'a');
  const b = lease('bot-one', 'b');
  assert.equal(await a.acquire(), true);
  const token = a.token;
  assert.equal(await b.acquire(), false);
  assert.equal(b.token, null);
  assert.equal(await a.acquire(), true);
  assert.equal(a.token, token);
  assert.equal(await a.check(), token);
  await assert.rejects(b.check(), (err) => isLeaseLost(err));
});

test('a released lease is free at once and the next owner gets a larger token', async () => {
  const a = lease('bot-two', 'a');
  const b = lease('bot-two', 'b');
  await a.acquire();
  const first = a.token!;
  await a.release();
  assert.equal(a.token, null);
  assert.equal(await b.acquire(), true);
  assert.ok(b.token! > first, `${b.token} > ${first}`);
});

test('an owner whose lease expired and was taken over cannot renew and fails the fencing check', async () => {
  const a = lease('bot-three', 'a', 200);
  const b = lease('bot-three', 'b', 10_000);
  await a.acquire();
  const stale = a.token!;
  await until('the lease to expire', async () => b.acquire());
  assert.ok(b.token! > stale);
  // `a` still believes it owns the bot until it asks Redis.
  assert.equal(a.token, stale);
  await assert.rejects(a.check(), (err) => isLeaseLost(err) && err.token === stale);
  assert.equal(a.token, null, 'a failed check forgets the lease');
  const a2 = lease('bot-three', 'a', 200);
  assert.equal(await a2.acquire(), false);
  assert.equal(await b.renew(), true);
});

test('renewing after the lease expired (nobody took it) reports it lost rather than re-taking it silently', async () => {
  const a = lease('bot-four', 'a', 100);
  await a.acquire();
  await until('the lease to expire', async () => (await redis.exists(`${prefix}:gw:{bot-four}:lease`)) === 0);
  assert.equal(await a.renew(), false);
  assert.equal(a.token, null);
});

test('a stale release does not free the lease of the owner that took over', async () => {
  const a = lease('bot-five', 'a', 100);
  await a.acquire();
  const b = lease('bot-five', 'b');
  await until('the lease to expire', async () => b.acquire());
  await a.release();
  assert.equal(await b.check(), b.token);
});

test('anyone can read who holds a lease and for how long, without touching it', async () => {
  assert.deepEqual(await readConnectionLease(redis, prefix, 'bot-read'), { holder: null, token: null, expiresInMs: null, resumable: false });
  const a = lease('bot-read', 'replica-a|with-bar', 10_000);
  assert.equal(await a.acquire(), true);
  const seen = await readConnectionLease(redis, prefix, 'bot-read');
  assert.deepEqual([seen.holder, seen.token, seen.resumable], ['replica-a|with-bar', a.token, false]);
  assert.ok(seen.expiresInMs !== null && seen.expiresInMs > 0 && seen.expiresInMs <= 10_000);
  assert.equal(await a.check(), a.token, 'still held');
  await a.release();
  assert.equal((await readConnectionLease(redis, prefix, 'bot-read')).holder, null);
});
