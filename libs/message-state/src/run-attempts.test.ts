import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { RunAttempts } from './run-attempts.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

test('attempt numbers rise with every start of a run, per query, across replicas', async () => {
  const a = new RunAttempts(redis, prefix);
  const b = new RunAttempts(redis, prefix);
  assert.deepEqual([await a.next('q1'), await b.next('q1'), await a.next('q1')], [1, 2, 3]);
  assert.equal(await b.next('q2'), 1, 'another query counts on its own');
});
