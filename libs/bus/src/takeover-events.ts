// Human takeover's changes over core NATS: the admin replica that made a change (taken, returned,
// reply, dismissed) or the orchestrator or runner that recorded a chat's request for a person
// (requested) publishes `TakeoverEvent`; orchestrators keep the taken chats from them and admin
// replicas show them live. This is the one publisher of that message.
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { TakeoverEvent } from '@conveyor/contracts';
import { ATTR, busTracer, messagingAttributes, messagingSpanName, natsHeaderSetter } from './otel.js';

/** Publishes one change (a producer span; its trace context travels in the headers) and flushes it. */
export async function publishTakeoverEvent(nc: NatsConnection, subject: string, event: TakeoverEvent): Promise<void> {
  const body = TakeoverEvent.parse(event);
  const data = JSON.stringify(body);
  const span = busTracer().startSpan(messagingSpanName('send', subject), {
    kind: SpanKind.PRODUCER,
    attributes: { ...messagingAttributes('send', subject, undefined), [ATTR.bodySize]: Buffer.byteLength(data), 'conveyor.takeover.kind': body.kind, 'conveyor.bot.id': body.chat.botId },
  });
  try {
    const h = headers();
    propagation.inject(trace.setSpan(context.active(), span), h, natsHeaderSetter);
    nc.publish(subject, data, { headers: h });
    await nc.flush();
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
