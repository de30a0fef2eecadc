import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

const shas = new Map<string, string>();

function sha1(script: string): string {
  let sha = shas.get(script);
  if (!sha) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}

/**
 * Runs a Lua script by its SHA (EVALSHA), sending the body only when the server does not know it yet.
 * Every lease, window and delivery step is a script on the per-message path; sending their bodies
 * each time was the dispatcher's largest CPU cost.
 */
export async function evalScript(redis: Redis, script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(sha1(script), numKeys, ...args);
  } catch (err) {
    if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
    return redis.eval(script, numKeys, ...args);
  }
}
