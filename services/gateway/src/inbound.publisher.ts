import { randomUUID } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { PayloadValidationError } from '@conveyor/bus';
import { QueryEnvelope } from '@conveyor/contracts';
import { isLeaseLost, type ConnectionLease } from '@conveyor/gateway';
import type { InboundQuery } from '@conveyor/platform-kit';
import { SessionLeases } from '@conveyor/pipeline';
import type { Infra } from '@conveyor/service-kit';
import { inSpan, meter } from '@conveyor/telemetry';

const inbound = meter.createCounter('conveyor_gateway_inbound_messages', { description: 'Inbound messages from held platform connections, by outcome' });

/** A publish that failed for a passing reason (the broker restarting) is tried again this often. */
const PUBLISH_ATTEMPTS = 5;

/**
 * Turns a message that arrived on a held connection into a query on the bus, as the ingress does for
 * webhooks. Fenced: a replica that lost the bot's lease publishes nothing. De-duplicated by the
 * platform's message id (JetStream's duplicate window), so the same message received by two
 * replicas around a takeover becomes one query.
 */
export class GatewayInbound {
  private readonly leases: SessionLeases;

  constructor(private readonly infra: Infra) {
    this.leases = new SessionLeases(infra.redis, infra.topology.prefix);
  }

  publish(adapter: string, lease: ConnectionLease, q: InboundQuery): Promise<void> {
    const botId = lease.botId;
    return inSpan(`${adapter} receive`, { 'conveyor.bot.id': botId, 'conveyor.adapter': adapter, 'messaging.message.id': q.replyTo }, async (span) => {
      const token = await lease.check().catch((err: unknown) => {
        inbound.add(1, { adapter, outcome: isLeaseLost(err) ? 'fenced' : 'failed' });
        throw err;
      });
      span.setAttribute('conveyor.gateway.fencing_token', token);
      const queryId = randomUUID();
      const envelope: QueryEnvelope = {
        v: 1,
        queryId,
        receivedAt: new Date().toISOString(),
        route: {
          botId,
          adapter,
          sessionId: q.sessionId,
          launcherType: q.launcherType,
          launcherId: q.sessionId,
          senderId: q.senderId,
          replyTo: q.replyTo,
          ...(q.stream !== undefined ? { stream: q.stream } : {}),
        },
        senderName: q.senderName,
        ...(q.groupName !== undefined ? { groupName: q.groupName } : {}),
        messageChain: q.messageChain,
      };
      const subject = this.infra.topology.subjects.query(botId);
      // The same id the ingress gives a webhook delivery: adapter, bot and the platform's own id.
      const msgId = `${adapter}:${botId}:${q.dedupId}`;
      for (let attempt = 1; ; attempt++) {
        try {
          const ack = await this.infra.publisher.publish(subject, QueryEnvelope, envelope, { msgId, queryId });
          inbound.add(1, { adapter, outcome: ack.duplicate ? 'duplicate' : 'accepted' });
          span.setAttribute('conveyor.query_id', queryId);
          if (ack.duplicate) {
            this.infra.logger.info({ botId, dedupId: q.dedupId }, 'inbound message already published; dropped as a duplicate');
            return;
          }
          await this.leases.register(envelope.route, queryId, ack.seq).catch((err: unknown) =>
            this.infra.logger.warn({ err, queryId }, 'could not register the message in its session queue'),
          );
          return;
        } catch (err) {
          if (attempt >= PUBLISH_ATTEMPTS || err instanceof PayloadValidationError) {
            inbound.add(1, { adapter, outcome: 'failed' });
            throw err;
          }
          await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
        }
      }
    }, SpanKind.CONSUMER);
  }
}
