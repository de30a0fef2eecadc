import type { Redis } from 'ioredis';

/**
 * Whether a query already sent a streamed chunk: a later notice (a failure mid-stream) then goes
 * through the chunk path, as LangBot's `_check_output` does. Shared because replicas share a query.
 */
export class StreamedFlag {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async set(queryId: string): Promise<void> {
    await this.redis.set(`${this.prefix}:streamed:${queryId}`, '1', 'EX', 6 * 3600);
  }

  async get(queryId: string): Promise<boolean> {
    return (await this.redis.exists(`${this.prefix}:streamed:${queryId}`)) === 1;
  }
}
