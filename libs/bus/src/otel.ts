import { trace, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { Match, type MsgHdrs } from '@nats-io/transport-node';

/** One tracer for everything the bus does. Looked up lazily so a provider registered later is used. */
export function busTracer() {
  return trace.getTracer('@conveyor/bus');
}

/** Writes W3C trace context (traceparent, tracestate, baggage) into NATS headers. */
export const natsHeaderSetter: TextMapSetter<MsgHdrs> = {
  set(carrier, key, value) {
    carrier.set(key, value);
  },
};

/** Reads W3C trace context from NATS headers (case-insensitively); a message without headers has no parent. */
export const natsHeaderGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys(carrier) {
    return carrier ? carrier.keys() : [];
  },
  get(carrier, key) {
    if (!carrier || !carrier.has(key, Match.IgnoreCase)) return undefined;
    return carrier.get(key, Match.IgnoreCase);
  },
};

/** Attribute names (OpenTelemetry messaging semantic conventions, plus NATS-specific ones). */
export const ATTR = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  /** The subject pattern a subject with a bot or knowledge base id in it belongs to (`conveyor.v1.query.>`). */
  destinationTemplate: 'messaging.destination.template',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  messageId: 'messaging.message.id',
  bodySize: 'messaging.message.body.size',
  consumerGroup: 'messaging.consumer.group.name',
  deliveryCount: 'messaging.nats.message.delivery_count',
  stream: 'messaging.nats.stream.name',
  streamSequence: 'messaging.nats.stream.sequence',
  queryId: 'conveyor.query_id',
  duplicate: 'messaging.nats.duplicate',
} as const;

/** The messaging operations the bus traces: `send` (PRODUCER) and `process` (CONSUMER), as type and name alike. */
export type MessagingOperation = 'send' | 'process';

/**
 * A messaging span's name by the conventions, `{messaging.operation.name} {destination}`, where the
 * destination is the low-cardinality template when there is one (a subject carries a bot id), else
 * the destination itself.
 */
export function messagingSpanName(operation: MessagingOperation, destination: string): string {
  return `${operation} ${destination}`;
}

/** The attributes every messaging span of the bus starts with. */
export function messagingAttributes(operation: MessagingOperation, subject: string, template: string | undefined) {
  return {
    [ATTR.system]: 'nats',
    [ATTR.operationType]: operation,
    [ATTR.operationName]: operation,
    [ATTR.destination]: subject,
    ...(template ? { [ATTR.destinationTemplate]: template } : {}),
  };
}
