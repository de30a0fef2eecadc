// A real Redis for the tests of one file: a key prefix no other run uses, and every key under it
// removed afterwards.
import { after, before } from 'node:test';
import { Redis } from 'ioredis';
import { randomPrefix } from './bus.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestRedis {
  /** The file's prefix; keys the code under test writes must start with `${prefix}:`. */
  readonly prefix: string;
  /** The file's shared connection (opened in a before hook). */
  redis(): Redis;
  /** Another connection, for code that needs its own (closed with the others). */
  client(): Redis;
}

/** Deletes every key that starts with `${prefix}:`, in SCAN batches. */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** Call at the top level of a test file. */
export function useTestRedis(prefix = randomPrefix()): TestRedis {
  const clients: Redis[] = [];
  const client = () => {
    const r = new Redis(REDIS_URL);
    clients.push(r);
    return r;
  };
  let shared: Redis | undefined;
  before(() => {
    shared = client();
  });
  after(async () => {
    if (shared) await deleteKeys(shared, prefix);
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  });
  return {
    prefix,
    redis: () => {
      if (!shared) throw new Error('useTestRedis: the connection is opened in a before hook');
      return shared;
    },
    client,
  };
}
