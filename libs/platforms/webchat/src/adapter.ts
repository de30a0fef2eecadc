import { context, propagation } from '@opentelemetry/api';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { plainText, type DebugChat, type ReplyRoute, type Topology } from '@conveyor/contracts';
import type { DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';

/** What the ingress streams to the browser for one part. */
export type WebChatPart = DebugChat.WebChatPart;

/**
 * The web chat playground's outbound: each part goes over core NATS to the ingress replica whose
 * browser connection (SSE) subscribed to the session. A part nobody listens to is dropped, as a
 * closed browser tab would drop it.
 */
export class WebChatAdapter implements PlatformAdapter {
  readonly name = 'webchat' as const;

  constructor(
    private readonly nc: NatsConnection,
    private readonly topology: Topology,
  ) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const part: WebChatPart = { queryId: ctx.queryId, replyTo: route.replyTo, text: plainText(reply.message), isFinal: reply.isFinal, stream: reply.stream };
    const h = natsHeaders();
    propagation.inject(context.active(), h, { set: (c, k, v) => c.set(k, v) });
    this.nc.publish(this.topology.subjects.webchat(route.botId, route.sessionId), JSON.stringify(part), { headers: h });
    return { delivered: true };
  }
}
