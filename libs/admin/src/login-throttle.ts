// Sign-in and setup guessing is bounded, per client address: a user name is locked out only for the
// address that guessed it (anyone elsewhere, the real admin included, can still sign in), and one
// address guessing across many names is stopped by a limit of its own. Counted in Redis, so every
// admin replica sees the same counts.
//
// An attempt is counted before the password is checked, in one script that also decides whether it may
// go ahead: requests racing in parallel each take their own place in the count, so no more than the
// limit of them ever reach the password check. A successful sign-in gives its place back.
import { redisKeys } from '@conveyor/contracts';
import { AdminApiError } from './errors.js';

/** The Redis command the throttle needs (ioredis fits). */
export interface ThrottleStore {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
}

export interface LoginThrottleOptions {
  /** Attempts not yet proven good, per (user name, address), within the window. */
  perUser: number;
  /** Per address, over every user name. */
  perAddress: number;
  /** Setup attempts per address. */
  setup: number;
  windowMs: number;
}

export const DEFAULT_THROTTLE: LoginThrottleOptions = { perUser: 10, perAddress: 50, setup: 10, windowMs: 15 * 60_000 };

/**
 * KEYS: the counters. ARGV[1]: the window (ms); ARGV[1 + i]: the limit of KEYS[i].
 * Returns 0 after counting the attempt in every counter, or the remaining milliseconds of the first
 * counter at its limit (nothing counted then).
 */
const ATTEMPT = `
for i, key in ipairs(KEYS) do
  local n = tonumber(redis.call('GET', key) or '0')
  if n >= tonumber(ARGV[i + 1]) then
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then
      redis.call('PEXPIRE', key, ARGV[1])
      ttl = tonumber(ARGV[1])
    end
    return ttl
  end
end
for _, key in ipairs(KEYS) do
  redis.call('INCR', key)
  redis.call('PEXPIRE', key, ARGV[1], 'NX')
end
return 0
`;

/** KEYS[1]: the (user, address) counter, cleared; KEYS[2]: the address counter, given one place back. */
const SUCCEEDED = `
redis.call('DEL', KEYS[1])
local n = tonumber(redis.call('GET', KEYS[2]) or '0')
if n > 0 then redis.call('DECR', KEYS[2]) end
return 0
`;

/** The address as Express reports it, IPv4 without its IPv6 mapping, bounded. */
export function clientAddress(ip: string | undefined): string {
  const address = (ip ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
  return address.slice(0, 100) || 'unknown';
}

export class LoginThrottle {
  constructor(
    private readonly store: ThrottleStore,
    private readonly prefix: string,
    private readonly options: LoginThrottleOptions = DEFAULT_THROTTLE,
  ) {}

  /** Counts a sign-in attempt, or throws 429 while the name is locked out for this address (or the address is). */
  async attemptLogin(username: string, address: string): Promise<void> {
    const keys = redisKeys(this.prefix);
    // Bounded: the user name is validated to 100 characters before it gets here.
    const user = keys.adminLoginAttempts(username.toLowerCase(), address);
    const from = keys.adminAddressAttempts('login', address);
    const ttl = Number(await this.store.eval(ATTEMPT, 2, user, from, this.options.windowMs, this.options.perUser, this.options.perAddress));
    if (ttl > 0) this.refuse(ttl, 'body.username', 'too many failed sign-ins from this address');
  }

  /** The sign-in succeeded: the name's count for this address is cleared, the address's attempt given back. */
  async succeeded(username: string, address: string): Promise<void> {
    const keys = redisKeys(this.prefix);
    await this.store.eval(SUCCEEDED, 2, keys.adminLoginAttempts(username.toLowerCase(), address), keys.adminAddressAttempts('login', address));
  }

  /** Counts a setup attempt (each costs a password hash), or throws 429 past the address's limit. */
  async attemptSetup(address: string): Promise<void> {
    const key = redisKeys(this.prefix).adminAddressAttempts('setup', address);
    const ttl = Number(await this.store.eval(ATTEMPT, 1, key, this.options.windowMs, this.options.setup));
    if (ttl > 0) this.refuse(ttl, 'body.token', 'too many setup attempts from this address');
  }

  private refuse(ttlMs: number, field: string, why: string): never {
    const retryAfterSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
    throw new AdminApiError('rate_limited', `${field}: ${why}; try again in ${retryAfterSeconds} s`, { field, retryAfterSeconds });
  }
}
