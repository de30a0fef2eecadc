import { redisKeys } from '@conveyor/contracts';
import type { Redis } from 'ioredis';
import type { RateDecision, RateLimiterPort } from '../engine/ports.js';
import { evalScript } from '@conveyor/redis-scripts';

// LangBot's fixwin algorithm in one atomic step: the window is aligned to the epoch (bucket = now -
// now % window), a full window denies (and a denied request does not count), and buckets expire on
// their own. rate-limiter-flexible aligns windows to the first request, so it does not match here.
// Redis TIME is the clock, so replicas with skewed clocks share the same buckets.
const REQUIRE = `
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windowMs = tonumber(ARGV[1]) * 1000
local bucket = nowMs - (nowMs % windowMs)
local key = KEYS[1] .. ':' .. bucket
local count = tonumber(redis.call('GET', key) or '0')
if count >= tonumber(ARGV[2]) then return bucket + windowMs - nowMs end
redis.call('INCR', key)
redis.call('PEXPIRE', key, windowMs * 2)
return -1`;

export class RedisFixedWindow implements RateLimiterPort {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async require(key: string, windowSeconds: number, limit: number): Promise<RateDecision> {
    const r = Number(await evalScript(this.redis, REQUIRE, 1, redisKeys(this.prefix).rateLimitWindow(key), windowSeconds, limit));
    return r < 0 ? { allowed: true } : { allowed: false, retryInMs: Math.max(1, r) };
  }
}
