import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { PluginCallStats } from './plugin-call-stats.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

test('calls, errors and mean time per plugin over the window, summed across processes; older minutes fall out', async () => {
  const redis = new Redis(REDIS_URL);
  const prefix = `stats${process.pid}${Date.now()}`;
  let now = 1_700_000_000_000;
  try {
    const a = new PluginCallStats(redis, prefix, () => now);
    const b = new PluginCallStats(redis, prefix, () => now);
    a.record({ plugin: 'acme/x', ok: true, ms: 10 });
    a.record({ plugin: 'acme/x', ok: false, ms: 30 });
    b.record({ plugin: 'acme/x', ok: true, ms: 20 });
    b.record({ plugin: 'acme/y', ok: true, ms: 5 });
    await Promise.all([a.flush(), b.flush()]);
    now += 59 * 60_000;
    a.record({ plugin: 'acme/y', ok: false, ms: 15 });
    await a.flush();
    const summary = await a.summary(60);
    assert.deepEqual(Object.fromEntries(summary), { 'acme/x': { calls: 3, errors: 1, meanMs: 20 }, 'acme/y': { calls: 2, errors: 1, meanMs: 10 } });
    now += 60_000;
    assert.deepEqual(Object.fromEntries(await a.summary(60)), { 'acme/y': { calls: 1, errors: 1, meanMs: 15 } }, 'the first minute left the window');
    const ttl = await redis.ttl(`${prefix}:plugin-stats:${Math.floor(now / 60_000) - 1}`);
    assert.ok(ttl > 0 && ttl <= 7_200, `buckets expire (${ttl})`);
  } finally {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
});
