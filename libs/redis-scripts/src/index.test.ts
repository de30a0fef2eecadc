import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { evalScript } from './index.js';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
after(() => redis.disconnect());

test('a script runs on first use (server does not know it) and by SHA afterwards', async () => {
  // A body unique to this run, so the server cannot have it cached from earlier runs.
  const script = `-- ${randomBytes(8).toString('hex')}\nreturn tonumber(ARGV[1]) + 1`;
  assert.equal(await evalScript(redis, script, 0, 41), 42);
  const [known] = (await redis.script('EXISTS', (await import('node:crypto')).createHash('sha1').update(script).digest('hex'))) as number[];
  assert.equal(known, 1, 'the server cached it');
  assert.equal(await evalScript(redis, script, 0, 1), 2);
});

test('a script error is reported, not retried as NOSCRIPT', async () => {
  await assert.rejects(evalScript(redis, `return redis.call('NOPE')`, 0), /Unknown Redis command|unknown command/i);
});
