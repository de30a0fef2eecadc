import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { JetStreamClient, PubAck } from '@nats-io/jetstream';
import type { z } from 'zod';
import { HEADERS, LIMITS, type StreamSpec } from '@conveyor/contracts';
import { isBrokerUnavailable, PayloadTooLargeError, PayloadValidationError } from './errors.js';
import { ATTR, busTracer, messagingAttributes, messagingSpanName, natsHeaderSetter } from './otel.js';
import { describeIssues } from './validate.js';
import { subjectMatches } from './subject.js';
import { busMetrics } from './metrics.js';

export interface PublishOptions {
  /** JetStream de-duplication id (`Nats-Msg-Id`): a repeat within the stream's duplicate window is dropped. */
  msgId: string;
  /** The query this message belongs to (`Conveyor-Query-Id`), for tooling. */
  queryId?: string;
  /**
   * `Conveyor-Schema` header, `<name>/<version>`. Defaults to the schema's zod meta id
   * (`schema.meta({ id })`) when it has one; otherwise no header is set.
   */
  schemaName?: string;
  /** Extra headers (not W3C trace context, which is always injected). */
  headers?: Record<string, string>;
  /** How long to wait for the PubAck. Default: the JetStream client's timeout. */
  timeoutMs?: number;
  /**
   * Keep trying this long when the broker does not acknowledge (it restarts, the connection is down):
   * the same `Nats-Msg-Id` each time, so a message stored whose ack was lost is not stored twice. A
   * producer whose later messages depend on this one (a reply's numbered events) must not move on past
   * a message that was never stored. Default 0: one try.
   */
  retryForMs?: number;
  /**
   * Which failures `retryForMs` retries: `any` (default), or only `unavailable` ones (no broker
   * answered, the stream has no leader while its cluster elects one; see isBrokerUnavailable), so a
   * caller waiting on the answer is told at once about anything else (a full stream).
   */
  retryWhen?: 'any' | 'unavailable';
  /**
   * `false`: the payload was built here from typed values whose schema bounds nothing beyond the
   * payload's size (a streamed chunk), so it is sent as built: the consumer's decode validates it and
   * dead-letters what it refuses, and the producer does not pay for a second check per message. The
   * size bound holds either way. Default true: validated (and unknown keys stripped) before sending.
   */
  validate?: boolean;
}

/** First pause between publish tries; doubled each time up to PUBLISH_RETRY_MAX_MS. */
const PUBLISH_RETRY_FIRST_MS = 100;
const PUBLISH_RETRY_MAX_MS = 2_000;

export interface BusPublisherOptions {
  /**
   * The streams subjects belong to: a span is named after the stream's subject pattern
   * (`send conveyor.v1.query.>`), the low-cardinality template of subjects that carry ids. Without
   * them, after the stream the PubAck names.
   */
  streams?: readonly StreamSpec[];
  /** Upper bound of an encoded payload. Default LIMITS.busPayloadBytes. */
  maxPayloadBytes?: number;
}

const encoder = new TextEncoder();

/**
 * Publishes validated, traced, de-duplicated messages to JetStream and waits for the stream to store
 * them (the PubAck). A producer bug (payload not matching its own schema, or too large) throws before
 * anything is sent; with `validate: false` only the size is checked here (see PublishOptions).
 */
export class BusPublisher {
  readonly #js: JetStreamClient;
  readonly #streams: readonly StreamSpec[];
  readonly #maxBytes: number;

  constructor(js: JetStreamClient, opts: BusPublisherOptions = {}) {
    this.#js = js;
    this.#streams = opts.streams ?? [];
    this.#maxBytes = opts.maxPayloadBytes ?? LIMITS.busPayloadBytes;
  }

  async publish<S extends z.ZodType>(subject: string, schema: S, payload: z.input<S>, opts: PublishOptions): Promise<PubAck> {
    if (!opts.msgId) throw new TypeError(`publish to ${subject}: msgId is required (it is the de-duplication id)`);
    let body: unknown = payload;
    if (opts.validate !== false) {
      const parsed = schema.safeParse(payload);
      if (!parsed.success) throw new PayloadValidationError(subject, describeIssues(parsed.error));
      body = parsed.data;
    }
    const data = encoder.encode(JSON.stringify(body));
    if (data.byteLength > this.#maxBytes) throw new PayloadTooLargeError(subject, data.byteLength, this.#maxBytes);

    const h = natsHeaders();
    for (const [k, v] of Object.entries(opts.headers ?? {})) h.set(k, v);
    if (opts.queryId) h.set(HEADERS.queryId, opts.queryId);
    const schemaName = opts.schemaName ?? schemaId(schema);
    if (schemaName) h.set(HEADERS.schema, schemaName);

    const spec = this.#streams.find((s) => s.subjects.some((p) => subjectMatches(p, subject)));
    const stream = spec?.name;
    const template = spec?.subjects.find((p) => subjectMatches(p, subject));
    const span = busTracer().startSpan(messagingSpanName('send', template ?? subject), {
      kind: SpanKind.PRODUCER,
      attributes: {
        ...messagingAttributes('send', subject, template),
        [ATTR.messageId]: opts.msgId,
        [ATTR.bodySize]: data.byteLength,
        ...(stream ? { [ATTR.stream]: stream } : {}),
        ...(opts.queryId ? { [ATTR.queryId]: opts.queryId } : {}),
      },
    });
    propagation.inject(trace.setSpan(context.active(), span), h, natsHeaderSetter);
    try {
      const ack = await this.publishWithRetry(subject, data, h, opts, span);
      busMetrics().published.add(1, { stream: ack.stream, outcome: ack.duplicate ? 'duplicate' : 'stored' });
      span.setAttribute(ATTR.streamSequence, ack.seq);
      span.setAttribute(ATTR.duplicate, ack.duplicate);
      if (!stream) {
        // Named after the subject until the stream is known: keep span names low-cardinality.
        span.setAttribute(ATTR.stream, ack.stream);
        span.updateName(messagingSpanName('send', ack.stream));
      }
      return ack;
    } catch (err) {
      busMetrics().published.add(1, { stream: stream ?? 'unknown', outcome: 'error' });
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  }

  private async publishWithRetry(subject: string, data: Uint8Array, headers: ReturnType<typeof natsHeaders>, opts: PublishOptions, span: Span): Promise<PubAck> {
    const deadline = Date.now() + (opts.retryForMs ?? 0);
    for (let attempt = 1, pause = PUBLISH_RETRY_FIRST_MS; ; attempt++, pause = Math.min(pause * 2, PUBLISH_RETRY_MAX_MS)) {
      try {
        return await this.#js.publish(subject, data, {
          msgID: opts.msgId,
          headers,
          ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
        });
      } catch (err) {
        if (Date.now() + pause >= deadline || (opts.retryWhen === 'unavailable' && !isBrokerUnavailable(err))) throw err;
        span.addEvent('publish retry', { attempt, error: (err as Error).message });
        busMetrics().publishRetries.add(1);
        await sleep(pause);
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function schemaId(schema: z.ZodType): string | undefined {
  const meta = (schema as { meta?: () => { id?: unknown } | undefined }).meta?.();
  return typeof meta?.id === 'string' ? meta.id : undefined;
}
