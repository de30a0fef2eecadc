import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApiError } from './errors.js';
import { LoginThrottle, type ThrottleStore } from './login-throttle.js';

/** Redis' semantics for these commands, with a clock the test moves. */
function memoryStore(clock: { now: number }): ThrottleStore & { keys(): string[] } {
  const data = new Map<string, { value: number; expiresAt?: number }>();
  const live = (key: string) => {
    const entry = data.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= clock.now) data.delete(key);
    return data.get(key);
  };
  return {
    keys: () => [...data.keys()],
    get: async (key) => (live(key) ? String(live(key)!.value) : null),
    incr: async (key) => {
      const entry = live(key) ?? { value: 0 };
      entry.value++;
      data.set(key, entry);
      return entry.value;
    },
    pexpire: async (key, ms) => {
      const entry = live(key);
      if (!entry || entry.expiresAt !== undefined) return 0;
      entry.expiresAt = clock.now + ms;
      return 1;
    },
    pttl: async (key) => {
      const entry = live(key);
      return !entry ? -2 : entry.expiresAt === undefined ? -1 : entry.expiresAt - clock.now;
    },
    del: async (key) => (data.delete(key) ? 1 : 0),
  };
}

test('after the limit of failures a user name is refused with 429 until the window ends; other names are not affected', async () => {
  const clock = { now: 0 };
  const throttle = new LoginThrottle(memoryStore(clock), 'p', { limit: 3, windowMs: 60_000 });
  for (let i = 0; i < 3; i++) {
    await throttle.check('Admin');
    await throttle.failed('Admin');
  }
  await assert.rejects(throttle.check('admin'), (err: AdminApiError) => err.code === 'rate_limited' && err.statusCode === 429 && err.details.retryAfterSeconds === 60 && err.details.field === 'body.username');
  await throttle.check('someone-else');
  clock.now += 60_001;
  await throttle.check('admin');
});

test('a successful sign-in clears the count', async () => {
  const clock = { now: 0 };
  const store = memoryStore(clock);
  const throttle = new LoginThrottle(store, 'p', { limit: 2, windowMs: 60_000 });
  await throttle.failed('ops');
  await throttle.succeeded('ops');
  await throttle.failed('ops');
  await throttle.check('ops');
  assert.deepEqual(store.keys(), ['p:admin:login-failures:ops']);
});
