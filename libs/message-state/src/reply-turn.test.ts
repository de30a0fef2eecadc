import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { redisKeys } from '@conveyor/contracts';
import { ReplyTurns } from './reply-turn.js';
import { SessionLeases } from './session-leases.js';
import { StreamedFlag } from './streamed-flag.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const session = (id: string) => ({ botId: 'b', adapter: 'http-bot' as const, launcherType: 'person', launcherId: id });
const leases = () => new SessionLeases(redis, prefix, { ttlMs: 5_000, settleMs: 0, pipelineCap: 10, staleMs: 60_000 });
const turns = () => new ReplyTurns(leases(), new StreamedFlag(redis, prefix), 60_000);

async function held(id: string, queryId: string): Promise<void> {
  const outcome = await leases().acquire(session(id), queryId, 1);
  assert.equal(outcome, 'acquired');
}

test('keep holds the session for another lease TTL, once per tenth of it per replica', async () => {
  await held('keep', 'q1');
  const lease = redisKeys(prefix).sessionLease(session('keep'));
  assert.ok((await redis.pttl(lease)) <= 5_000, 'acquired with the short TTL');
  const a = turns();
  await a.keep(session('keep'), 'q1');
  assert.ok((await redis.pttl(lease)) > 50_000, 'kept for the dispatcher\'s TTL');
  await redis.pexpire(lease, 3_000);
  await a.keep(session('keep'), 'q1');
  assert.ok((await redis.pttl(lease)) <= 3_000, 'a second keep right after costs no Redis call');
  await turns().keep(session('keep'), 'q1');
  assert.ok((await redis.pttl(lease)) > 50_000, 'another replica keeps it on its own clock');
});

test('keep does not take a lease another query holds', async () => {
  await held('other', 'holder');
  const lease = redisKeys(prefix).sessionLease(session('other'));
  await redis.pexpire(lease, 3_000);
  await turns().keep(session('other'), 'not-the-holder');
  assert.ok((await redis.pttl(lease)) <= 3_000, 'the holder\'s lease is not extended by a stale reply');
});

test('a streamed chunk is seen by every replica; a reply that never streamed reads false', async () => {
  const a = turns();
  const b = turns();
  assert.equal(await b.hasStreamed('s1'), false);
  await a.streamed('s1');
  assert.equal(await b.hasStreamed('s1'), true);
  assert.equal(await a.hasStreamed('s2'), false);
});

test('abandon frees the session for its next message, once', async () => {
  await held('abandon', 'q1');
  const t = turns();
  await t.keep(session('abandon'), 'q1');
  assert.equal(await leases().acquire(session('abandon'), 'q2', 2), 'session-busy');
  assert.equal(await t.abandon(session('abandon'), 'q1'), true);
  assert.equal(await t.abandon(session('abandon'), 'q1'), false, 'a second abandon changes nothing');
  assert.equal(await leases().acquire(session('abandon'), 'q2', 2), 'acquired');
});
