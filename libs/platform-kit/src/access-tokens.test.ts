import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisKeys } from '@conveyor/contracts';
import { appKey, SharedAccessTokens } from './access-tokens.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix, client } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

/** A token endpoint that takes a while, counting its calls. */
function endpoint(ms = 150) {
  let calls = 0;
  return {
    calls: () => calls,
    fetch: async () => {
      const n = ++calls;
      await delay(ms);
      return { token: `tok-${n}`, expiresInS: 7200 };
    },
  };
}

test('replicas asking at once for a token no replica keeps make one fetch; all get its token', async () => {
  const e = endpoint();
  const app = appKey('base', 'wx1', 'secret');
  // Four replicas (own clients), each with several replies asking at once.
  const replicas = Array.from({ length: 4 }, () => new SharedAccessTokens(client(), prefix, 'demo', { pollMs: 20 }));
  const got = await Promise.all(replicas.flatMap((r) => [r.get(app, e.fetch), r.get(app, e.fetch), r.get(app, e.fetch)]));
  assert.equal(e.calls(), 1);
  assert.deepEqual(new Set(got), new Set(['tok-1']));
  const ttl = await redis.pttl(redisKeys(prefix).accessToken('demo', app));
  assert.ok(ttl > 7000_000 - 5 * 60_000 - 10_000 && ttl <= 7200_000 - 5 * 60_000, `kept until shortly before it expires (${ttl} ms)`);
  assert.equal(await redis.exists(redisKeys(prefix).accessTokenLock('demo', app)), 0, 'the lock is let go');
  assert.ok(!app.includes('secret'));
});

test('an invalidated token is fetched again once; invalidating a token already replaced keeps the new one', async () => {
  const e = endpoint(10);
  const app = appKey('base', 'wx2', 'secret');
  const a = new SharedAccessTokens(redis, prefix, 'demo');
  const b = new SharedAccessTokens(client(), prefix, 'demo');
  assert.equal(await a.get(app, e.fetch), 'tok-1');
  await a.invalidate(app, 'tok-1');
  assert.equal(await b.get(app, e.fetch), 'tok-2');
  // A replica that still held tok-1 says it expired: tok-2 stays.
  await a.invalidate(app, 'tok-1');
  assert.equal(await a.get(app, e.fetch), 'tok-2');
  assert.equal(e.calls(), 2);
});

test('a failed fetch fails its callers and lets the lock go, so the next ask fetches; a held lock is waited for, bounded', async () => {
  const app = appKey('base', 'wx3', 'secret');
  const t = new SharedAccessTokens(redis, prefix, 'demo', { waitMs: 300, pollMs: 20 });
  await assert.rejects(t.get(app, async () => { throw new Error('errcode 40013 invalid appid'); }), /40013/);
  assert.equal(await redis.exists(redisKeys(prefix).accessTokenLock('demo', app)), 0);
  assert.equal(await t.get(app, async () => ({ token: 'ok', expiresInS: 7200 })), 'ok');
  // Another replica holds the lock and never stores a token (it died): the wait ends with an error.
  const other = appKey('base', 'wx4', 'secret');
  await redis.set(redisKeys(prefix).accessTokenLock('demo', other), 'someone', 'PX', 10_000);
  const started = Date.now();
  await assert.rejects(t.get(other, async () => ({ token: 'never', expiresInS: 7200 })), /did not store it in time/);
  assert.ok(Date.now() - started < 2_000);
});
