import { Inject, Injectable } from '@nestjs/common';
import type { ReplyRoute } from '@conveyor/contracts';
import type { InboundMessage as PlatformInboundMessage } from '@conveyor/platform-kit';
import { QueryIntake } from '@conveyor/message-state';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { meter } from '@conveyor/telemetry';

/** A platform's message as the ingress publishes it: who sent what, for which bot, answering which id. */
export interface InboundMessage extends PlatformInboundMessage {
  botId: string;
  acceptedMessageId: string;
  /** The caller's idempotency key; JetStream's duplicate window then rejects a replay on any replica. */
  idempotencyKey?: string;
  /** The platform the replies go back to; default `http-bot`. */
  adapter?: ReplyRoute['adapter'];
  /** De-duplication id when the platform has its own (Telegram's update_id). */
  msgId?: string;
  /** Whether replies stream to this platform (Telegram: the bot's `enable-stream-reply`). */
  stream?: boolean;
}

/** Inbound publishes in flight per replica before the ingress answers 503 (LangBot: 100 listener tasks per bot). */
export const MAX_INFLIGHT_PUBLISHES = 100;

export class OverloadedError extends Error {}

/**
 * Redis is not connected: the ingress cannot put the message in its session queue and the services
 * behind it cannot run it, so the caller is told to come back later (503, like an overload) at once
 * rather than after ioredis has given up on its queued commands (three reconnection attempts, ~16 s).
 */
export class RedisUnavailableError extends OverloadedError {}

/** Throws RedisUnavailableError unless the Redis connection is up; recovery needs nothing but Redis coming back. */
export function requireRedisConnected(infra: Infra): void {
  if (infra.redis.status !== 'ready') throw new RedisUnavailableError(`Redis is not connected (${infra.redis.status})`);
}

const accepted = meter.createCounter('conveyor_ingress_messages', { description: 'Inbound messages by outcome' });

/** Turns an accepted inbound message into a query on the bus. */
@Injectable()
export class QueryPublisher {
  private readonly intake: QueryIntake;

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    this.intake = new QueryIntake(infra);
  }

  /** Returns false when the idempotency key was already accepted. */
  private readonly inflight = new Map<string, number>();

  async publish(m: InboundMessage): Promise<{ duplicate: boolean; queryId: string }> {
    requireRedisConnected(this.infra);
    const n = this.inflight.get(m.botId) ?? 0;
    if (n >= MAX_INFLIGHT_PUBLISHES) {
      accepted.add(1, { bot: m.botId, outcome: 'overloaded' });
      throw new OverloadedError('too many inbound messages in flight');
    }
    this.inflight.set(m.botId, n + 1);
    try {
      return await this.publishNow(m);
    } finally {
      const left = (this.inflight.get(m.botId) ?? 1) - 1;
      if (left <= 0) this.inflight.delete(m.botId);
      else this.inflight.set(m.botId, left);
    }
  }

  private async publishNow(m: InboundMessage): Promise<{ duplicate: boolean; queryId: string }> {
    const { queryId, duplicate, seq } = await this.intake.publish({
      botId: m.botId,
      adapter: m.adapter ?? 'http-bot',
      sessionId: m.sessionId,
      launcherType: m.launcherType,
      senderId: m.senderId,
      senderName: m.senderName,
      ...(m.groupName !== undefined ? { groupName: m.groupName } : {}),
      replyTo: m.acceptedMessageId,
      ...(m.stream !== undefined ? { stream: m.stream } : {}),
      messageChain: m.messageChain,
      ...(m.msgId ?? m.idempotencyKey ? { msgId: m.msgId ?? `idem:${m.botId}:${m.idempotencyKey}` } : {}),
    });
    accepted.add(1, { bot: m.botId, outcome: duplicate ? 'duplicate' : 'accepted' });
    // The one line that ties what the platform knows (its message id) to the query id every later log
    // line carries. Not the reply handle: for some platforms (LINE's reply token, DingTalk's session
    // webhook) that is a credential.
    this.infra.logger.debug?.({ queryId, messageId: m.msgId ?? m.acceptedMessageId, botId: m.botId, streamSeq: seq, duplicate }, 'message accepted');
    return { duplicate, queryId };
  }
}
