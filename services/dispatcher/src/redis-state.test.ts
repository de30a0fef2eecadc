import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { AttemptGate } from './attempt-gate.js';
import { SessionSequence } from '@conveyor/delivery';

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

test('events of an older attempt are refused once a newer attempt was seen', async () => {
  const gate = new AttemptGate(redis, prefix);
  assert.equal(await gate.admit('q1', 1), true);
  assert.equal(await gate.admit('q1', 1), true, 'the same attempt keeps flowing');
  assert.equal(await gate.admit('q1', 2), true);
  assert.equal(await gate.admit('q1', 1), false, 'attempt 1 is superseded');
  assert.equal(await gate.admit('q2', 1), true, 'other queries are unaffected');
});

test('callback sequence restarts after a final reply and counts up otherwise, per session (protocol §8.4)', async () => {
  const seq = new SessionSequence(redis, prefix);
  const got = [];
  for (const final of [false, false, true, true, false, true]) got.push(await seq.next('bot', 's1', final));
  assert.deepEqual(got, [1, 2, 3, 1, 1, 2]);
  assert.equal(await seq.next('bot', 's2', true), 1, 'another session has its own count');
  // A turn that never ended with a final part (LangBot: a failure notice mid-stream) keeps counting.
  const quirk = [];
  for (const final of [false, false, false, /* next turn */ false, true]) quirk.push(await seq.next('bot', 's3', final));
  assert.deepEqual(quirk, [1, 2, 3, 4, 5]);
});
