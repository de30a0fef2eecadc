import { SpanKind } from '@opentelemetry/api';
import { PayloadValidationError } from '@conveyor/bus';
import { isLeaseLost, type ConnectionLease } from '@conveyor/gateway';
import type { InboundQuery } from '@conveyor/platform-kit';
import { QueryIntake } from '@conveyor/message-state';
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
  private readonly intake: QueryIntake;

  constructor(private readonly infra: Infra) {
    this.intake = new QueryIntake(infra);
  }

  publish(adapter: string, lease: ConnectionLease, q: InboundQuery): Promise<void> {
    const botId = lease.botId;
    // The platform's message id, not `replyTo`: a reply handle can be a credential (DingTalk's session webhook).
    return inSpan(`${adapter} receive`, { 'conveyor.bot.id': botId, 'conveyor.adapter': adapter, 'messaging.message.id': q.dedupId }, async (span) => {
      const token = await lease.check().catch((err: unknown) => {
        inbound.add(1, { adapter, outcome: isLeaseLost(err) ? 'fenced' : 'failed' });
        throw err;
      });
      span.setAttribute('conveyor.gateway.fencing_token', token);
      const message = {
        botId,
        adapter,
        sessionId: q.sessionId,
        launcherType: q.launcherType,
        senderId: q.senderId,
        senderName: q.senderName,
        ...(q.groupName !== undefined ? { groupName: q.groupName } : {}),
        replyTo: q.replyTo,
        ...(q.stream !== undefined ? { stream: q.stream } : {}),
        messageChain: q.messageChain,
        // The same id the ingress gives a webhook delivery: adapter, bot and the platform's own id.
        msgId: `${adapter}:${botId}:${q.dedupId}`,
      };
      for (let attempt = 1; ; attempt++) {
        try {
          const { queryId, duplicate } = await this.intake.publish(message);
          inbound.add(1, { adapter, outcome: duplicate ? 'duplicate' : 'accepted' });
          span.setAttribute('conveyor.query_id', queryId);
          if (duplicate) this.infra.logger.info({ botId, dedupId: q.dedupId }, 'inbound message already published; dropped as a duplicate');
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
