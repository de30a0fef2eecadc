import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { QueryEnvelope, type MessageChain, type LauncherType, type ReplyRoute } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { SessionLeases } from '@conveyor/pipeline';
import { meter } from '@conveyor/telemetry';

export interface InboundMessage {
  botId: string;
  acceptedMessageId: string;
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageChain: MessageChain;
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
  private readonly leases: SessionLeases;

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    this.leases = new SessionLeases(infra.redis, infra.topology.prefix);
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
    const queryId = randomUUID();
    const envelope: QueryEnvelope = {
      v: 1,
      queryId,
      receivedAt: new Date().toISOString(),
      route: {
        botId: m.botId,
        adapter: m.adapter ?? 'http-bot',
        sessionId: m.sessionId,
        launcherType: m.launcherType,
        // LangBot's launcher id: the group for group chats, the person otherwise; both are the session id here.
        launcherId: m.sessionId,
        senderId: m.senderId,
        replyTo: m.acceptedMessageId,
        ...(m.stream !== undefined ? { stream: m.stream } : {}),
      },
      senderName: m.senderName,
      ...(m.groupName !== undefined ? { groupName: m.groupName } : {}),
      messageChain: m.messageChain,
    };
    const msgId = m.msgId ?? (m.idempotencyKey ? `idem:${m.botId}:${m.idempotencyKey}` : queryId);
    const ack = await this.infra.publisher.publish(this.infra.topology.subjects.query(m.botId), QueryEnvelope, envelope, { msgId, queryId });
    accepted.add(1, { bot: m.botId, outcome: ack.duplicate ? 'duplicate' : 'accepted' });
    // The one line that ties what the platform knows (its reply_to) to the query id every later log line carries.
    this.infra.logger.debug?.({ queryId, replyTo: m.acceptedMessageId, botId: m.botId, streamSeq: ack.seq, duplicate: ack.duplicate }, 'message accepted');
    if (!ack.duplicate) await this.registerInSession(envelope, ack.seq);
    return { duplicate: ack.duplicate, queryId };
  }

  /**
   * Puts the message in its session's queue before the caller hears 202, so the orchestrator can run
   * it without waiting out the settle time. Best effort: without it the orchestrator registers the
   * message itself and only waits longer.
   */
  private async registerInSession(envelope: QueryEnvelope, streamSeq: number): Promise<void> {
    const { route } = envelope;
    try {
      await this.leases.register(route, envelope.queryId, streamSeq);
    } catch (err) {
      this.infra.logger.warn({ err, queryId: envelope.queryId }, 'could not register the message in its session queue');
    }
  }
}
