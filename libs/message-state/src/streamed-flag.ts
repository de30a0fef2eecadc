import { redisKeys } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';

/**
 * Whether a query already sent a streamed chunk: a later notice (a failure mid-stream) then goes
 * through the chunk path, as LangBot's `_check_output` does. Shared because replicas share a query.
 */
export class StreamedFlag {
  /** Queries this replica already flagged, so a stream of chunks costs one Redis write, not one per chunk. */
  private readonly flagged = new Set<string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async set(queryId: string): Promise<void> {
    if (this.flagged.has(queryId)) return;
    await this.redis.set(redisKeys(this.prefix).streamed(queryId), '1', 'EX', 6 * 3600);
    this.flagged.add(queryId);
    if (this.flagged.size > MAX_REMEMBERED) this.flagged.delete(this.flagged.values().next().value!);
  }

  async get(queryId: string): Promise<boolean> {
    if (this.flagged.has(queryId)) return true;
    return (await this.redis.exists(redisKeys(this.prefix).streamed(queryId))) === 1;
  }
}

const MAX_REMEMBERED = 10_000;

