// Sign-in guessing is bounded: after `limit` failed sign-ins for one user name within the window,
// further tries are refused (429) until the window ends. Counted in Redis, so every admin replica
// sees the same count. A successful sign-in clears it.
import { redisKeys } from '@conveyor/contracts';
import { AdminApiError } from './errors.js';

/** The Redis commands the throttle needs (ioredis fits). */
export interface ThrottleStore {
  get(key: string): Promise<string | null>;
  incr(key: string): Promise<number>;
  pexpire(key: string, ms: number, mode: 'NX'): Promise<number>;
  pttl(key: string): Promise<number>;
  del(key: string): Promise<number>;
}

export interface LoginThrottleOptions {
  limit: number;
  windowMs: number;
}

export class LoginThrottle {
  constructor(
    private readonly store: ThrottleStore,
    private readonly prefix: string,
    private readonly options: LoginThrottleOptions = { limit: 10, windowMs: 15 * 60_000 },
  ) {}

  /** Throws 429 while the user name is locked out. */
  async check(username: string): Promise<void> {
    const key = this.key(username);
    const failures = Number((await this.store.get(key)) ?? 0);
    if (failures < this.options.limit) return;
    // Sets the expiry should an earlier failure have stopped between its two commands.
    await this.store.pexpire(key, this.options.windowMs, 'NX');
    const ttl = await this.store.pttl(key);
    const retryAfterSeconds = Math.max(1, Math.ceil((ttl > 0 ? ttl : this.options.windowMs) / 1000));
    throw new AdminApiError('rate_limited', `body.username: too many failed sign-ins for this user; try again in ${retryAfterSeconds} s`, { field: 'body.username', retryAfterSeconds });
  }

  async failed(username: string): Promise<void> {
    const key = this.key(username);
    await this.store.incr(key);
    await this.store.pexpire(key, this.options.windowMs, 'NX');
  }

  async succeeded(username: string): Promise<void> {
    await this.store.del(this.key(username));
  }

  private key(username: string): string {
    // Bounded: the user name is validated to 100 characters before it gets here.
    return redisKeys(this.prefix).adminLoginFailures(username.toLowerCase());
  }
}
