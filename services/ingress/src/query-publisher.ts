import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { QueryEnvelope, type MessageChain, type LauncherType } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
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
}

const accepted = meter.createCounter('conveyor_ingress_messages', { description: 'Inbound messages by outcome' });

/** Turns an accepted inbound message into a query on the bus. */
@Injectable()
export class QueryPublisher {
  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  /** Returns false when the idempotency key was already accepted. */
  async publish(m: InboundMessage): Promise<{ duplicate: boolean; queryId: string }> {
    const queryId = randomUUID();
    const envelope: QueryEnvelope = {
      v: 1,
      queryId,
      receivedAt: new Date().toISOString(),
      route: {
        botId: m.botId,
        adapter: 'http-bot',
        sessionId: m.sessionId,
        launcherType: m.launcherType,
        // LangBot's launcher id: the group for group chats, the person otherwise; both are the session id here.
        launcherId: m.sessionId,
        senderId: m.senderId,
        replyTo: m.acceptedMessageId,
      },
      senderName: m.senderName,
      ...(m.groupName !== undefined ? { groupName: m.groupName } : {}),
      messageChain: m.messageChain,
    };
    const msgId = m.idempotencyKey ? `idem:${m.botId}:${m.idempotencyKey}` : queryId;
    const ack = await this.infra.publisher.publish(this.infra.topology.subjects.query(m.botId), QueryEnvelope, envelope, { msgId, queryId });
    accepted.add(1, { bot: m.botId, outcome: ack.duplicate ? 'duplicate' : 'accepted' });
    return { duplicate: ack.duplicate, queryId };
  }
}
