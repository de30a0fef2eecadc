import { redisKeys, type RedisKeyLayout, type RedisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';
import type { AdmittedRate, RateWindowRequest, SessionRef } from './session-leases.js';

// LangBot's fixwin algorithm (includes/count-in-window.lua). rate-limiter-flexible aligns windows to
// the first request, so it does not match here.
const scripts = loadScripts(new URL('../lua/', import.meta.url), ['rate-window', 'rate-uncount'] as const);

export type RateDecision = { allowed: true } | { allowed: false; retryInMs: number };

/** A chat's fixed rate window, kept beside its session's keys. */
export class RedisFixedWindow {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    layout?: RedisKeyLayout,
  ) {
    this.keys = redisKeys(prefix, layout);
  }

  async require(s: SessionRef, key: string, windowSeconds: number, limit: number, queryId: string): Promise<RateDecision> {
    const r = Number(await scripts['rate-window'].run(this.redis, [this.keys.rateLimitWindow(s, key)], [windowSeconds, limit, queryId]));
    return r < 0 ? { allowed: true } : { allowed: false, retryInMs: Math.max(1, r) };
  }

  /** Gives a count back to the bucket that took it (`AdmittedRate.bucket`). */
  async uncount(bucket: string, queryId: string): Promise<void> {
    await scripts['rate-uncount'].run(this.redis, [bucket], [queryId]);
  }
}

/**
 * The rate window of one query's turn, as its rate-limit stage sees it (the pipeline's `RateLimiterPort`): the stage's question, when it
 * is the one admission answered, gets admission's decision with no round trip; any other (the
 * pipeline's settings changed in between) goes to Redis, where the query's count in the same bucket
 * is the one admission made. `unasked` names the count the query must give back as it leaves:
 * admission counted it, and the stage never came.
 */
export class TurnRateWindow {
  private asked = false;

  constructor(
    private readonly window: RedisFixedWindow,
    private readonly session: SessionRef,
    private readonly queryId: string,
    private readonly request?: RateWindowRequest,
    private readonly admitted?: AdmittedRate,
  ) {}

  async require(key: string, windowSeconds: number, limit: number, queryId: string): Promise<RateDecision> {
    this.asked = true;
    const r = this.request;
    const a = this.admitted;
    if (a && r && queryId === this.queryId && key === r.key && windowSeconds === r.windowSeconds && limit === r.limit) {
      return a.allowed ? { allowed: true } : { allowed: false, retryInMs: a.retryInMs };
    }
    return this.window.require(this.session, key, windowSeconds, limit, queryId);
  }

  /** The bucket to give the query's count back to, when admission counted it and the stage never asked. */
  get unasked(): string | undefined {
    return !this.asked && this.admitted?.allowed ? this.admitted.bucket : undefined;
  }
}
