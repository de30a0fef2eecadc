import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { redisKeys, type RedisKeys } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';
import { releaseIfHeld } from './held-call.js';

/** A token as the platform's token endpoint gave it. */
export interface FetchedToken {
  token: string;
  /** Seconds it is valid from now (`expires_in`). */
  expiresInS: number;
}

export interface SharedAccessTokenOptions {
  /** Renewed this long before the platform says it ends (half its lifetime when that is shorter). */
  marginMs?: number;
  /** The fetching replica's lock lives this long at most (a replica that died while fetching lets go by then). */
  lockTtlMs?: number;
  /** How long a replica waits for another one's fetch before it gives up. */
  waitMs?: number;
  pollMs?: number;
}

/** The key an app's token is kept under: a hash of what identifies it, so no secret becomes a key. */
export function appKey(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32);
}

/**
 * API access tokens of platform apps (WeChat, WeCom), one per app for every replica: kept in Redis
 * until shortly before they expire. When none is kept, one replica fetches it (a short `SET NX` lock)
 * while the others wait for it to appear, and parts of many replies on one replica share that wait,
 * so the token endpoint (rate-limited per app, and each fetch may end the previous token) is asked
 * once, not once per replica or reply.
 */
export class SharedAccessTokens {
  private readonly keys: RedisKeys;
  private readonly pending = new Map<string, Promise<string>>();
  private readonly marginMs: number;
  private readonly lockTtlMs: number;
  private readonly waitMs: number;
  private readonly pollMs: number;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly adapter: string,
    o: SharedAccessTokenOptions = {},
  ) {
    this.keys = redisKeys(prefix);
    this.marginMs = o.marginMs ?? 5 * 60_000;
    this.lockTtlMs = o.lockTtlMs ?? 15_000;
    this.waitMs = o.waitMs ?? 20_000;
    this.pollMs = o.pollMs ?? 100;
  }

  /** The app's token: the kept one, or one `fetchToken` got (on this replica or another). */
  get(app: string, fetchToken: () => Promise<FetchedToken>, signal?: AbortSignal): Promise<string> {
    const inFlight = this.pending.get(app);
    if (inFlight) return inFlight;
    const p = this.obtain(app, fetchToken, signal).finally(() => this.pending.delete(app));
    this.pending.set(app, p);
    return p;
  }

  /**
   * Calls `use` with the app's token; when the platform refuses it (`rejected`: invalid or expired
   * before its time), forgets it and calls once more with a fresh one.
   */
  async withToken<T>(app: string, fetchToken: () => Promise<FetchedToken>, use: (token: string) => Promise<T>, rejected: (err: unknown) => boolean, signal?: AbortSignal): Promise<T> {
    for (let fresh = false; ; fresh = true) {
      const token = await this.get(app, fetchToken, signal);
      try {
        return await use(token);
      } catch (err) {
        if (fresh || !rejected(err)) throw err;
        await this.invalidate(app, token);
      }
    }
  }

  /** Forgets `token` (the platform said it is invalid or expired), unless another replica already replaced it. */
  async invalidate(app: string, token: string): Promise<void> {
    await releaseIfHeld(this.redis, this.keys.accessToken(this.adapter, app), token);
  }

  private async obtain(app: string, fetchToken: () => Promise<FetchedToken>, signal?: AbortSignal): Promise<string> {
    const key = this.keys.accessToken(this.adapter, app);
    const lock = this.keys.accessTokenLock(this.adapter, app);
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const kept = await this.redis.get(key);
      if (kept) return kept;
      const mine = randomUUID();
      if ((await this.redis.set(lock, mine, 'PX', this.lockTtlMs, 'NX')) === 'OK') {
        try {
          // Another replica may have stored one between the read and the lock.
          const stored = await this.redis.get(key);
          if (stored) return stored;
          const fetched = await fetchToken();
          const lifetimeMs = fetched.expiresInS * 1000;
          const ttlMs = Math.floor(Math.max(lifetimeMs - this.marginMs, lifetimeMs / 2));
          if (ttlMs >= 1) await this.redis.set(key, fetched.token, 'PX', ttlMs);
          return fetched.token;
        } finally {
          await releaseIfHeld(this.redis, lock, mine).catch(() => undefined);
        }
      }
      if (Date.now() >= deadline) throw new Error('no access token: another replica is fetching it and did not store it in time');
      await delay(this.pollMs, undefined, signal ? { signal } : undefined);
    }
  }
}
