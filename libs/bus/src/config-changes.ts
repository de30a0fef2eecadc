// Live configuration over core NATS: a write to a bot, pipeline, model or MCP server publishes
// `ConfigChanged`, and every service replica drops its cached copy of that row at once. Core NATS
// delivers only to who listens now, so a replica that was disconnected may have missed events: on
// reconnect it drops all its configuration caches instead (the next reads go to Postgres).
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { ConfigChanged } from '@conveyor/contracts';
import { ATTR, busTracer, messagingAttributes, messagingSpanName, natsHeaderGetter, natsHeaderSetter } from './otel.js';
import type { BusLogger } from './logger.js';

/** Publishes one change (a producer span; its trace context travels in the headers). */
export function publishConfigChanged(nc: NatsConnection, subject: string, event: ConfigChanged): void {
  const body = ConfigChanged.parse(event);
  const data = JSON.stringify(body);
  // The subject is one fixed name, so it is its own low-cardinality destination.
  const span = busTracer().startSpan(messagingSpanName('send', subject), {
    kind: SpanKind.PRODUCER,
    attributes: { ...messagingAttributes('send', subject, undefined), [ATTR.bodySize]: Buffer.byteLength(data), 'conveyor.config.kind': body.kind, 'conveyor.config.id': body.id },
  });
  try {
    const h = headers();
    propagation.inject(trace.setSpan(context.active(), span), h, natsHeaderSetter);
    nc.publish(subject, data, { headers: h });
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}

export interface ConfigChangeHandlers {
  /** One row changed or was deleted: drop it. */
  onChange(event: ConfigChanged): void;
  /** Events may have been missed (reconnected): drop everything. */
  onReset(reason: string): void;
  logger: BusLogger;
}

/** Subscribes for the process's lifetime; returns the subscription (closed by draining the connection). */
export function subscribeConfigChanges(nc: NatsConnection, subject: string, handlers: ConfigChangeHandlers): Subscription {
  const sub = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) {
        handlers.logger.warn({ err: err.message, subject }, 'config change subscription error; dropping configuration caches');
        handlers.onReset('subscription error');
        return;
      }
      const parent = propagation.extract(context.active(), msg.headers, natsHeaderGetter);
      const span = busTracer().startSpan(
        messagingSpanName('process', subject),
        { kind: SpanKind.CONSUMER, attributes: { ...messagingAttributes('process', subject, undefined), [ATTR.bodySize]: msg.data.byteLength } },
        parent,
      );
      try {
        let raw: unknown;
        try {
          raw = msg.json();
        } catch {
          raw = undefined;
        }
        const parsed = ConfigChanged.safeParse(raw);
        if (!parsed.success) {
          // A malformed event says something changed without saying what: drop everything, to be safe.
          handlers.logger.warn({ subject, traceId: span.spanContext().traceId, issues: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`) }, 'invalid config change event; dropping configuration caches');
          span.setStatus({ code: SpanStatusCode.ERROR, message: 'invalid ConfigChanged' });
          handlers.onReset('invalid event');
          return;
        }
        span.setAttributes({ 'conveyor.config.kind': parsed.data.kind, 'conveyor.config.id': parsed.data.id, 'conveyor.config.revision': parsed.data.revision });
        handlers.onChange(parsed.data);
      } finally {
        span.end();
      }
    },
  });
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'reconnect') handlers.onReset('reconnected to NATS');
    }
  })().catch(() => undefined);
  return sub;
}
