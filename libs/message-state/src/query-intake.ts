import { randomUUID } from 'node:crypto';
import { QueryEnvelope, type RedisKeyLayout, type Topology } from '@conveyor/contracts';
import type { InboundMessage } from '@conveyor/platform-kit';
import type { RedisClient } from '@conveyor/redis-scripts';
import type { PublishPort } from './publish-port.js';
import { DEFAULT_LEASE_OPTIONS, SessionLeases } from './session-leases.js';

/** What intake needs of the service: the bus, its subjects, the Redis of the session queues. */
export interface QueryIntakeDeps {
  publisher: PublishPort;
  topology: Pick<Topology, 'prefix' | 'subjects'>;
  redis: RedisClient;
  keyLayout?: RedisKeyLayout;
  logger: { warn(obj: object, msg: string): void };
}

/** A message a platform handed over (a webhook at the ingress, a held connection at the gateway). */
export interface InboundQueryMessage extends InboundMessage {
  botId: string;
  adapter: string;
  /** What the platform calls the message, for the replies (HTTP-bot's accepted_message_id). */
  replyTo: string;
  /** Whether replies stream to this platform; absent lets the pipeline decide. */
  stream?: boolean;
  /**
   * JetStream's de-duplication id: the platform's own message id or the caller's idempotency key, so a
   * redelivered message becomes one query on any replica; absent, the new query id.
   */
  msgId?: string;
}

export interface IntakeResult {
  queryId: string;
  duplicate: boolean;
  /** The query's sequence on the queries stream. */
  seq: number;
}

/**
 * How long intake keeps trying a publish no broker takes (no answer, or the queries stream electing a
 * leader after its NATS node was lost: up to about 10 s on NATS 2.9) before the caller is told to come
 * back later. The request waits meanwhile, bounded by the ingress's in-flight limit; a full stream is
 * refused at once.
 */
export const INTAKE_UNAVAILABLE_RETRY_MS = 10_000;

/**
 * The one publisher of `QueryEnvelope`: builds the envelope of an inbound message, publishes it
 * (de-duplicated by `msgId`) and puts the new query in its session's queue before the caller answers
 * the platform, so the orchestrator can run it without waiting out the settle time.
 */
export class QueryIntake {
  private readonly leases: SessionLeases;

  constructor(private readonly infra: QueryIntakeDeps) {
    this.leases = new SessionLeases(infra.redis, infra.topology.prefix, DEFAULT_LEASE_OPTIONS, infra.keyLayout);
  }

  async publish(m: InboundQueryMessage): Promise<IntakeResult> {
    const queryId = randomUUID();
    const envelope: QueryEnvelope = {
      v: 1,
      queryId,
      receivedAt: new Date().toISOString(),
      route: {
        botId: m.botId,
        adapter: m.adapter,
        sessionId: m.sessionId,
        launcherType: m.launcherType,
        launcherId: m.sessionId,
        senderId: m.senderId,
        replyTo: m.replyTo,
        ...(m.stream !== undefined ? { stream: m.stream } : {}),
      },
      senderName: m.senderName,
      ...(m.groupName !== undefined ? { groupName: m.groupName } : {}),
      messageChain: m.messageChain,
    };
    const ack = await this.infra.publisher.publish(this.infra.topology.subjects.query(m.botId), QueryEnvelope, envelope, {
      msgId: m.msgId ?? queryId,
      queryId,
      retryForMs: INTAKE_UNAVAILABLE_RETRY_MS,
      retryWhen: 'unavailable',
    });
    // Without a msgId of the caller's the id is this call's fresh query id: a duplicate can then only be
    // this call's own earlier try, stored though its ack was lost, and the message is new.
    const duplicate = ack.duplicate && m.msgId !== undefined;
    // Best effort: without it the orchestrator registers the message itself and only waits longer.
    if (!duplicate) {
      await this.leases.register(envelope.route, queryId, ack.seq).catch((err: unknown) =>
        this.infra.logger.warn({ err, queryId }, 'could not register the message in its session queue'),
      );
    }
    return { queryId, duplicate, seq: ack.seq };
  }
}
