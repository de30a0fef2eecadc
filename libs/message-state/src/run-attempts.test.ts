import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TraceFlags, type SpanContext } from '@opentelemetry/api';
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

const span = (spanId: string, traceFlags = TraceFlags.SAMPLED): SpanContext => ({ traceId: 'a'.repeat(32), spanId, traceFlags });

test('an attempt gets back the latest traced attempt before it; an untraced one keeps nothing', async () => {
  const a = new RunAttempts(redis, prefix);
  const b = new RunAttempts(redis, prefix);
  const first = await a.start('q3', span('1'.repeat(16)));
  assert.deepEqual(first, { attempt: 1 }, 'the first attempt has nothing to link to');
  const second = await b.start('q3', span('2'.repeat(16), TraceFlags.NONE));
  assert.equal(second.attempt, 2);
  assert.equal(second.previous?.spanId, '1'.repeat(16), 'the attempt that ran on the other replica');
  assert.equal(second.previous?.traceId, 'a'.repeat(32));
  assert.equal(second.previous?.isRemote, true);
  const third = await a.start('q3', span('3'.repeat(16)));
  assert.equal(third.previous?.spanId, '1'.repeat(16), 'the untraced attempt between left the traced one in place');
  const fourth = await b.start('q3');
  assert.deepEqual([fourth.attempt, fourth.previous?.spanId], [4, '3'.repeat(16)]);
  assert.equal(await a.next('q3'), 5, 'next numbers the same attempts');
  assert.ok((await redis.pttl(`{${prefix}:run-attempts:q3}:span`)) > 0, 'the span expires on its own');
});
