import { redisKeys, type MessageChain, type RedisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['sync-release'] as const);

/**
 * HTTP-bot `/sync` across replicas: the ingress replica holding the call registers the session
 * in Redis (`SET NX`, so a second /sync for the session gets 409) with its instance id; the dispatcher
 * replica sending a part of that session finds the registration and sends the part to that ingress
 * over core NATS request/reply (subject `topology.subjects.syncReply(instance)`), trace context in
 * the headers. An unanswered request (the ingress died, or already answered) falls back to the callback.
 */
export class SyncRegistrations {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = redisKeys(prefix);
  }

  /** Registers `instance` as holding the session's /sync call; false when another call already waits. */
  async claim(botId: string, sessionId: string, instance: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.keys.syncWaiter(botId, sessionId), instance, 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** Removes the registration if `instance` still holds it. */
  async release(botId: string, sessionId: string, instance: string): Promise<void> {
    await scripts['sync-release'].run(this.redis, [this.keys.syncWaiter(botId, sessionId)], [instance]);
  }

  /** The ingress instance holding the session's /sync call, if any. */
  holder(botId: string, sessionId: string): Promise<string | null> {
    return this.redis.get(this.keys.syncWaiter(botId, sessionId));
  }
}

export interface SyncPart {
  botId: string;
  sessionId: string;
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
  sequence: number;
}

export interface SyncAck {
  taken: boolean;
}
