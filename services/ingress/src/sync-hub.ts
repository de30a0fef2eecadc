import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import type { MessageComponent } from '@conveyor/contracts';
import { syncKey, type SyncAck, type SyncPart } from '@conveyor/delivery';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { evalScript } from '@conveyor/redis-scripts';
import { requireRedisConnected } from './query-publisher.js';

interface Waiter {
  parts: MessageComponent[];
  done: () => void;
}

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/**
 * Holds this replica's waiting `/sync` calls (HTTP-bot §11). The session is registered in Redis with
 * this replica's instance id, so a dispatcher replica diverts the session's reply parts here over core
 * NATS instead of the callback; the call returns at the first final part or at its deadline.
 */
@Injectable()
export class SyncHub implements OnModuleInit, OnApplicationShutdown {
  readonly instance = randomUUID();
  private readonly waiters = new Map<string, Waiter>();
  private sub: Subscription | undefined;

  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  onModuleInit() {
    this.sub = this.infra.nc.subscribe(this.infra.topology.subjects.syncReply(this.instance), {
      callback: (err, msg) => {
        if (err) return;
        let ack: SyncAck = { taken: false };
        try {
          const part = msg.json() as SyncPart;
          const w = this.waiters.get(key(part.botId, part.sessionId));
          if (w) {
            w.parts.push(...part.message);
            ack = { taken: true };
            if (part.isFinal) w.done();
          }
        } catch {
          ack = { taken: false };
        }
        msg.respond(JSON.stringify(ack));
      },
    });
  }

  async onApplicationShutdown() {
    this.sub?.unsubscribe();
  }

  /** Registers the session; false when another /sync for it is already waiting (on any replica). */
  async register(botId: string, sessionId: string, waitMs: number): Promise<{ wait: () => Promise<MessageComponent[]>; release: () => Promise<void> } | null> {
    requireRedisConnected(this.infra);
    const redisKey = syncKey(this.infra.topology.prefix, botId, sessionId);
    const ok = await this.infra.redis.set(redisKey, this.instance, 'PX', Math.max(1_000, waitMs + 5_000), 'NX');
    if (ok !== 'OK') return null;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const w: Waiter = { parts: [], done };
    this.waiters.set(key(botId, sessionId), w);
    const release = async () => {
      this.waiters.delete(key(botId, sessionId));
      await evalScript(this.infra.redis, RELEASE, 1, redisKey, this.instance);
    };
    return {
      release,
      wait: async () => {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([finished, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
        clearTimeout(timer);
        await release();
        return w.parts;
      },
    };
  }
}

function key(botId: string, sessionId: string) {
  return `${botId}\u0000${sessionId}`;
}
