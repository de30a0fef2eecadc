import { redisKeys, type RedisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['run-next-attempt'] as const);

/** Longer than any run with all its redeliveries. */
const ATTEMPTS_TTL_MS = 24 * 3600_000;

/**
 * Attempt numbers of a query's run. The dispatcher keeps the events of the newest attempt and refuses
 * older ones, so the number must rise with every start. JetStream's delivery count is not that number:
 * on nats-server 2.9 it can go back after repeated kills, and a newer attempt numbered lower would have
 * its whole reply refused. A counter in the same Redis as the reply state rises with every start (and
 * when Redis loses it, the reply state it guards is lost with it).
 */
export class RunAttempts {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = redisKeys(prefix);
  }

  /** The next attempt number of the query's run: 1, 2, 3, … */
  async next(queryId: string): Promise<number> {
    return Number(await scripts['run-next-attempt'].run(this.redis, [this.keys.runAttempts(queryId)], [ATTEMPTS_TTL_MS]));
  }
}
