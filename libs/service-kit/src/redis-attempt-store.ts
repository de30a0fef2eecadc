import { TraceFlags, type SpanContext } from '@opentelemetry/api';
import type { AttemptStore } from '@conveyor/bus';
import { redisKeys } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';

/** Longer than a run's redeliveries can stretch (max deliver × ack wait, with backoff). */
const TTL_SECONDS = 6 * 3600;

/**
 * Attempts shared by all replicas of a role, so a run restarted on another runner after its first
 * runner died links to the attempt that died. One Redis write per message, sent without waiting; used
 * for the runner, whose messages are few and long, not for the short per-message hops.
 */
export class RedisAttemptStore implements AttemptStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(key: string): string {
    return redisKeys(this.prefix).attemptSpan(key);
  }

  remember(key: string, span: SpanContext): void {
    void this.redis.set(this.key(key), `${span.traceId}:${span.spanId}:${span.traceFlags}`, 'EX', TTL_SECONDS).catch(() => undefined);
  }

  async recall(key: string): Promise<SpanContext | undefined> {
    const value = await this.redis.get(this.key(key));
    if (!value) return undefined;
    const [traceId, spanId, flags] = value.split(':');
    return { traceId, spanId, traceFlags: Number(flags) || TraceFlags.NONE, isRemote: true };
  }

  forget(key: string): void {
    void this.redis.del(this.key(key)).catch(() => undefined);
  }
}
