import { redisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';

// LangBot's fixwin algorithm (rate-window-1.lua). rate-limiter-flexible aligns windows to the first
// request, so it does not match here.
const scripts = loadScripts(new URL('../lua/', import.meta.url), ['rate-window'] as const);

export type RateDecision = { allowed: true } | { allowed: false; retryInMs: number };

/** A chat's fixed rate window; the pipeline's rate-limit stage calls it through its `RateLimiterPort`. */
export class RedisFixedWindow {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async require(key: string, windowSeconds: number, limit: number, queryId: string): Promise<RateDecision> {
    const r = Number(await scripts['rate-window'].run(this.redis, [redisKeys(this.prefix).rateLimitWindow(key)], [windowSeconds, limit, queryId]));
    return r < 0 ? { allowed: true } : { allowed: false, retryInMs: Math.max(1, r) };
  }
}
