import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { z } from 'zod';
import type { ConnectionState } from '@conveyor/platform-kit';
import { ConnectionLease, isLeaseLost } from './lease.js';
import { ConnectionStateStore } from './state.js';
import { ConnectionStateKeeper, SESSION_STORE_EVERY_MS } from './state-keeper.js';
import { useTestRedis } from '@conveyor/test-support';

/** A session as a platform would keep it: an id and the last sequence number handled. */
const Session = z.object({ sessionId: z.string(), seq: z.number().int().nullable(), resumeUrl: z.string(), botUserId: z.string() });
type Session = z.infer<typeof Session>;

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const session = (seq: number | null): Session => ({ sessionId: 'session-1', seq, resumeUrl: 'wss://gateway.example/', botUserId: '900' });

/** The real Redis store of a held bot, with every write it was asked for recorded (value and time). */
async function heldStore(botId: string) {
  const lease = new ConnectionLease({ redis, prefix, botId, ownerId: 'replica-1', ttlMs: 30_000 });
  assert.equal(await lease.acquire(), true);
  const store = new ConnectionStateStore({ redis, prefix, lease, schema: Session });
  const writes: { seq: number | null | undefined; at: number }[] = [];
  const recorded: ConnectionState<Session> = {
    get: () => store.get(),
    put: (value) => {
      writes.push({ seq: value.seq, at: Date.now() });
      return store.put(value);
    },
    clear: () => {
      writes.push({ seq: undefined, at: Date.now() });
      return store.clear();
    },
  };
  return { lease, store, writes, recorded };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a burst of sequence numbers is one write of the latest; the next waits out the interval', async () => {
  const { store, writes, recorded } = await heldStore('bot-burst');
  const keeper = new ConnectionStateKeeper<Session>(recorded, (err) => assert.fail(String(err)));
  for (let seq = 1; seq <= 100; seq++) keeper.soon(session(seq));
  await until('the burst stored', async () => (await store.get())?.seq === 100);
  assert.deepEqual(writes.map((w) => w.seq), [100]);
  keeper.soon(session(101));
  await until('the next one stored', async () => (await store.get())?.seq === 101);
  assert.equal(writes.length, 2);
  // Timers never fire early by more than Node's millisecond rounding.
  assert.ok(writes[1].at - writes[0].at >= SESSION_STORE_EVERY_MS - 5, `${writes[1].at - writes[0].at} ms between writes`);
});

test('the last word is written at once, replaces what waits, and nothing is written after it', async () => {
  const { store, writes, recorded } = await heldStore('bot-finish');
  const keeper = new ConnectionStateKeeper<Session>(recorded, (err) => assert.fail(String(err)));
  await keeper.now(session(1));
  keeper.soon(session(2));
  await keeper.finish(session(3));
  assert.equal((await store.get())?.seq, 3);
  keeper.soon(session(4));
  await keeper.now(session(5));
  await keeper.finish(null);
  assert.equal((await store.get())?.seq, 3);
  assert.deepEqual(writes.map((w) => w.seq), [1, 3]);
});

test('a session gone for good clears the state', async () => {
  const { store, recorded } = await heldStore('bot-gone');
  const keeper = new ConnectionStateKeeper<Session>(recorded, (err) => assert.fail(String(err)));
  await keeper.now(session(7));
  await keeper.now(null);
  assert.equal(await store.get(), undefined);
});

test('a write refused because the lease is gone is reported and does not stop the writes after it', async () => {
  const { lease, recorded } = await heldStore('bot-lost');
  const failures: unknown[] = [];
  const keeper = new ConnectionStateKeeper<Session>(recorded, (err) => failures.push(err));
  await lease.release();
  await keeper.now(session(1));
  await keeper.finish(session(2));
  assert.equal(failures.length, 2);
  assert.ok(failures.every(isLeaseLost));
});
