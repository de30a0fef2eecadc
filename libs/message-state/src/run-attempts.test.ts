import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RunAttempts } from './run-attempts.js';

const prefix = `t${randomBytes(5).toString('hex')}`;
let redis: Redis;
before(() => {
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
});
after(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

test('attempt numbers rise with every start of a run, per query, across replicas', async () => {
  const a = new RunAttempts(redis, prefix);
  const b = new RunAttempts(redis, prefix);
  assert.deepEqual([await a.next('q1'), await b.next('q1'), await a.next('q1')], [1, 2, 3]);
  assert.equal(await b.next('q2'), 1, 'another query counts on its own');
});
