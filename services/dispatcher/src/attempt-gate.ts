import type { Redis } from 'ioredis';
import { evalScript } from '@conveyor/redis-scripts';

/**
 * A run is at-least-once: when a runner dies mid-run, the run restarts on another replica as a new
 * attempt. Events carry their attempt; once an event of a newer attempt was seen, the older
 * attempt's late events are dropped so the user sees one clean reply.
 */
const ADMIT = `
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
local attempt = tonumber(ARGV[1])
if attempt < seen then return 0 end
if attempt > seen then redis.call('SET', KEYS[1], attempt, 'EX', ARGV[2]) end
return 1`;

/** Longer than any run plus its redeliveries. */
const TTL_SECONDS = 6 * 3600;

export class AttemptGate {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** False when a newer attempt of the query already produced events. */
  async admit(queryId: string, attempt: number): Promise<boolean> {
    return (await evalScript(this.redis, ADMIT, 1, `${this.prefix}:attempt:${queryId}`, attempt, TTL_SECONDS)) === 1;
  }
}
