import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import type { MessageComponent, ReplySessionKey } from '@conveyor/contracts';
import { SyncRegistrations, type SyncAck, type SyncPart } from '@conveyor/platform-kit';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { requireRedisConnected } from './query-publisher.js';

interface Waiter {
  parts: MessageComponent[];
  done: () => void;
}

/**
 * Holds this replica's waiting calls: HTTP-bot `/sync` calls, and webhook calls a platform holds for
 * its passive reply (see `ReplyHold`). The call's key is registered in Redis with this replica's
 * instance id, so a dispatcher replica diverts its reply parts here over core NATS instead of the
 * callback or the platform's API; the call returns at the first final part or at its deadline.
 */
@Injectable()
export class SyncHub implements OnModuleInit, OnApplicationShutdown {
  readonly instance = randomUUID();
  private readonly waiters = new Map<string, Waiter>();
  private sub: Subscription | undefined;
  private readonly registrations: SyncRegistrations;

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    this.registrations = new SyncRegistrations(infra.redis, infra.topology.prefix);
  }

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

  /**
   * Registers the call's key; null when another call for it is already waiting (on any replica).
   * `replySession`: the reply session whose parts the call takes, when its key is one (HTTP-bot `/sync`).
   */
  async register(botId: string, sessionId: string, waitMs: number, replySession?: ReplySessionKey): Promise<{ wait: () => Promise<MessageComponent[]>; release: () => Promise<void> } | null> {
    requireRedisConnected(this.infra);
    if (!(await this.registrations.claim(botId, sessionId, this.instance, Math.max(1_000, waitMs + 5_000), replySession))) return null;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const w: Waiter = { parts: [], done };
    this.waiters.set(key(botId, sessionId), w);
    const release = async () => {
      this.waiters.delete(key(botId, sessionId));
      await this.registrations.release(botId, sessionId, this.instance);
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
