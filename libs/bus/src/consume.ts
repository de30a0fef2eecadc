import { MemoryAttemptStore, previousAttemptLink, type AttemptStore } from './attempt-store.js';
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { z } from 'zod';
import { HEADERS, LIMITS, type ConsumerSpec } from '@conveyor/contracts';
import { defaultBackoff, type Backoff } from './backoff.js';
import { publishDeadLetter, type DeadLetterReason } from './dead-letter.js';
import { PermanentError, RetryableError } from './errors.js';
import { errorFields, silentLogger, type BusLogger } from './logger.js';
import { ATTR, busTracer, messagingAttributes, messagingSpanName, natsHeaderGetter } from './otel.js';
import type { BusPublisher } from './publish.js';
import { Semaphore } from './semaphore.js';
import { busMetrics, observeConsumer } from './metrics.js';
import { describeIssues } from './validate.js';

/** What a handler gets besides the validated payload. */
export interface MessageContext {
  readonly subject: string;
  readonly stream: string;
  readonly durable: string;
  /** 1 on the first delivery. */
  readonly deliveryCount: number;
  readonly streamSequence: number;
  readonly msgId: string | undefined;
  readonly queryId: string | undefined;
  readonly headers: MsgHdrs | undefined;
  /** Aborted when the consumer is stopping and gave up waiting for this handler (see `stop`). */
  readonly signal: AbortSignal;
  /** The CONSUMER span the handler runs in (it is also the active span). */
  readonly span: Span;
  /** Resets the ack timer. Sent automatically every ackWait/3 while the handler runs; call it for finer control. */
  working(): void;
}

/** Alias of MessageContext. */
export type ConsumeContext = MessageContext;

/** Returning means done (the message is acked); throwing steers redelivery (see RetryableError, PermanentError). */
export type MessageHandler<T> = (payload: T, ctx: MessageContext) => void | Promise<void>;

export interface StartConsumerOptions<S extends z.ZodType> {
  js: JetStreamClient;
  spec: ConsumerSpec;
  /** Every message is validated with it; a message that fails goes to the dead letters. */
  schema: S;
  handler: MessageHandler<z.output<S>>;
  /** The consumer's name in dead letters, e.g. `orchestrator`. */
  source: string;
  deadLetterSubject: string;
  publisherForDeadLetters: BusPublisher;
  /** Handlers running at once. Default 1. */
  concurrency?: number;
  /**
   * Messages requested per pull. Default 1: a message is only pulled when a handler slot is free, so no
   * message waits in this process while its ack timer runs, and idle replicas get the backlog instead.
   * Raise it for many short handlers; then up to `prefetch` messages may wait here for a free slot.
   */
  prefetch?: number;
  logger?: BusLogger;
  /** Redelivery delay after an unexpected handler error. Default 500 ms · 2^(n-1), capped at 30 s. */
  backoff?: Backoff;
  /** Interval of automatic working() heartbeats. Default spec.ackWaitMs / 3. */
  heartbeatMs?: number;
  /** Payloads above this go to the dead letters (`payload_too_large`). Default LIMITS.busPayloadBytes. */
  maxPayloadBytes?: number;
  /** Where attempts are remembered for linking redeliveries; default this process's memory. */
  attempts?: AttemptStore;
  /**
   * Whether a handler error means a dependency is down for a moment (Redis or Postgres restarting, the
   * connection being re-established). Such a message is retried here, in place, with heartbeats, for up
   * to `outageRetryMs`: a nak would spend one of its max_deliver deliveries per try and dead-letter a
   * reply's events during an outage of a few seconds. Default: no error is.
   */
  isOutage?: (err: unknown) => boolean;
  /** How long a message is retried in place through an outage before it takes the normal error path. Default 120 s. */
  outageRetryMs?: number;
}

/** First pause between in-place retries through an outage; doubled up to OUTAGE_RETRY_MAX_PAUSE_MS. */
const OUTAGE_RETRY_FIRST_PAUSE_MS = 200;
const OUTAGE_RETRY_MAX_PAUSE_MS = 2_000;

export interface StopOptions {
  /** How long to wait for running handlers. Default 25 s (inside Kubernetes' default 30 s grace period). */
  timeoutMs?: number;
  /** After the timeout, handlers' `signal` is aborted and they get this long to give up (and nak). Default 2 s. */
  abortGraceMs?: number;
}

export interface ConsumerHandle {
  /** Stops pulling, waits for running handlers (see StopOptions), then resolves. Idempotent. */
  stop(opts?: StopOptions): Promise<void>;
  /** Handlers running now. */
  readonly inFlight: number;
}

/** How a delivery ended, the `outcome` label of conveyor_bus_messages_consumed. */
type Outcome = 'acked' | 'nacked' | 'dead_lettered';

type Decoded<T> = { ok: true; value: T } | { ok: false; reason: DeadLetterReason; error: string };

/**
 * How long one pull request waits at the server. The client re-pulls when two of the server's idle
 * heartbeats (every half of this) are missed, which is how a pull left with a consumer leader that
 * died (a lost NATS cluster node) is noticed: at the client's 30 s default a reply stalls that long.
 * An idle consumer costs one pull per this interval.
 */
export const PULL_EXPIRES_MS = 5_000;

const decoder = new TextDecoder('utf-8', { fatal: true });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * Runs `handler` for every message of a durable pull consumer, at most `concurrency` at once.
 * Messages that fail validation go to the dead letters at once; handler failures are retried with
 * backoff up to the consumer's max_deliver and then dead-lettered, so nothing is silently lost and
 * nothing crash-loops.
 */
export async function startConsumer<S extends z.ZodType>(opts: StartConsumerOptions<S>): Promise<ConsumerHandle> {
  const { js, spec, schema, handler, source, deadLetterSubject, publisherForDeadLetters } = opts;
  const concurrency = opts.concurrency ?? 1;
  const prefetch = opts.prefetch ?? 1;
  const logger = opts.logger ?? silentLogger;
  const backoff = opts.backoff ?? defaultBackoff;
  const heartbeatMs = opts.heartbeatMs ?? Math.max(100, Math.floor(spec.ackWaitMs / 3));
  const maxPayloadBytes = opts.maxPayloadBytes ?? LIMITS.busPayloadBytes;
  const attempts = opts.attempts ?? new MemoryAttemptStore();
  const isOutage = opts.isOutage ?? (() => false);
  const outageRetryMs = opts.outageRetryMs ?? 120_000;
  const log = { stream: spec.stream, durable: spec.durable };

  const slots = new Semaphore(concurrency);
  const inflight = new Set<Promise<void>>();
  const abort = new AbortController();
  let stopping = false;
  let stopPromise: Promise<void> | undefined;
  let wake: () => void = () => {};
  const stopRequested = new Promise<void>((r) => (wake = r));

  const consumer = await js.consumers.get(spec.stream, spec.durable);
  let messages: ConsumerMessages = await consumer.consume({ max_messages: prefetch, expires: PULL_EXPIRES_MS });

  function warnRedelivery(what: string, m: JsMsg, err: unknown): void {
    logger.warn({ ...log, ...errorFields(err), seq: m.seq }, `${what} failed; the message will be redelivered after ack_wait`);
  }

  function safely(what: string, m: JsMsg, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      warnRedelivery(what, m, err);
    }
  }

  function decode(m: JsMsg): Decoded<z.output<S>> {
    if (m.data.byteLength > maxPayloadBytes) {
      return { ok: false, reason: 'payload_too_large', error: `payload is ${m.data.byteLength} bytes, above the limit of ${maxPayloadBytes}` };
    }
    let json: unknown;
    try {
      json = JSON.parse(decoder.decode(m.data));
    } catch (err) {
      return { ok: false, reason: 'invalid_payload', error: `invalid JSON: ${(err as Error).message}` };
    }
    let parsed: z.ZodSafeParseResult<z.output<S>>;
    try {
      parsed = schema.safeParse(json);
    } catch (err) {
      // The validator itself gave up on this payload (e.g. a RangeError from recursion deeper than the
      // stack): it can never pass, so it is as invalid as a payload that fails validation.
      const { name, message } = errorFields(err).err;
      return { ok: false, reason: 'invalid_payload', error: `schema validation threw ${name}: ${message}` };
    }
    if (!parsed.success) return { ok: false, reason: 'invalid_payload', error: `schema validation failed: ${describeIssues(parsed.error)}` };
    return { ok: true, value: parsed.data };
  }

  async function deadLetter(m: JsMsg, span: Span, reason: DeadLetterReason, error: string): Promise<Outcome> {
    const sc = span.spanContext();
    try {
      await publishDeadLetter(publisherForDeadLetters, deadLetterSubject, {
        source,
        stream: spec.stream,
        subject: m.subject,
        deliveryCount: m.info.deliveryCount,
        streamSequence: m.seq,
        reason,
        error,
        data: m.data,
        ...(isSpanContextValid(sc) ? { traceId: sc.traceId } : {}),
        ...(header(m.headers, HEADERS.queryId) ? { queryId: header(m.headers, HEADERS.queryId) } : {}),
      });
    } catch (err) {
      // Not terminated: the message stays in its stream and comes back, so it is not lost.
      logger.error({ ...log, ...errorFields(err), seq: m.seq, reason }, 'could not publish a dead letter; message nak-ed');
      safely('nak', m, () => m.nak(backoff(m.info.deliveryCount)));
      return 'nacked';
    }
    busMetrics().deadLetters.add(1, { source, reason });
    span.setAttribute('conveyor.dead_letter.reason', reason);
    logger.warn({ ...log, seq: m.seq, subject: m.subject, deliveryCount: m.info.deliveryCount, reason, error }, 'message dead-lettered');
    // Plain term (no reason text): `+TERM <reason>` needs nats-server 2.11.
    safely('term', m, () => m.term());
    return 'dead_lettered';
  }

  async function onHandlerError(m: JsMsg, span: Span, err: unknown): Promise<Outcome> {
    const e = err instanceof Error ? err : new Error(String(err));
    const n = m.info.deliveryCount;
    const lastDelivery = spec.maxDeliver > 0 && n >= spec.maxDeliver;
    if (err instanceof RetryableError && !lastDelivery) {
      // A deferral (a rate-limit wait, a busy session) is the normal path, not a failure.
      span.addEvent('deferred', { 'conveyor.defer.ms': err.delayMs, 'conveyor.defer.reason': e.message });
      logger.debug?.({ ...log, seq: m.seq, subject: m.subject, deliveryCount: n, delayMs: err.delayMs, reason: e.message }, 'message deferred');
      safely('nak', m, () => m.nak(err.delayMs));
      return 'nacked';
    }
    span.recordException(e);
    span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    if (err instanceof PermanentError) return deadLetter(m, span, 'handler_rejected', `${e.name}: ${e.message}`);
    if (lastDelivery) {
      return deadLetter(m, span, 'max_deliver', `failed on delivery ${n} of ${spec.maxDeliver}; last error: ${e.name}: ${e.message}`);
    }
    const delay = err instanceof RetryableError ? err.delayMs : abort.signal.aborted ? 0 : backoff(n);
    logger.warn({ ...log, ...errorFields(e), seq: m.seq, subject: m.subject, deliveryCount: n, delayMs: delay }, 'handler failed; message nak-ed');
    safely('nak', m, () => m.nak(delay));
    return 'nacked';
  }

  async function handle(m: JsMsg, span: Span): Promise<Outcome> {
    const decoded = decode(m);
    if (!decoded.ok) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: decoded.error });
      return deadLetter(m, span, decoded.reason, decoded.error);
    }
    const ctx: MessageContext = {
      subject: m.subject,
      stream: spec.stream,
      durable: spec.durable,
      deliveryCount: m.info.deliveryCount,
      streamSequence: m.seq,
      msgId: header(m.headers, HEADERS.msgId),
      queryId: header(m.headers, HEADERS.queryId),
      headers: m.headers,
      signal: abort.signal,
      span,
      working: () => safely('working', m, () => m.working()),
    };
    // Inside the CONSUMER span, so with LOG_LEVEL=debug every hop of a message is one log line
    // carrying its trace_id (the way to follow a message through the logs).
    logger.debug?.({ ...log, seq: m.seq, subject: m.subject, deliveryCount: m.info.deliveryCount, queryId: ctx.queryId }, 'message received');
    const started = performance.now();
    for (let pause = OUTAGE_RETRY_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, OUTAGE_RETRY_MAX_PAUSE_MS)) {
      try {
        await handler(decoded.value, ctx);
        break;
      } catch (err) {
        const waited = performance.now() - started;
        if (!isOutage(err) || abort.signal.aborted || waited + pause > outageRetryMs) return onHandlerError(m, span, err);
        logger.warn({ ...log, ...errorFields(err), seq: m.seq, queryId: ctx.queryId, waitedMs: Math.round(waited) }, 'a dependency is unavailable; retrying the message in place');
        busMetrics().outageRetries.add(1, { durable: spec.durable });
        span.addEvent('retry after outage', { 'error.message': err instanceof Error ? err.message : String(err) });
        await sleep(pause);
      }
    }
    logger.debug?.({ ...log, seq: m.seq, queryId: ctx.queryId, ms: Math.round(performance.now() - started) }, 'message handled');
    // A plain ack: waiting for the server to confirm it cost a round trip per message on every hop, and
    // buys nothing here. An ack lost in a broker restart redelivers a message whose work is done, and
    // every handler recognises that (de-duplication ids, ended replies, finished queries). The
    // connection's drain at shutdown sends the acks still buffered. While stopping, the ack is
    // confirmed, so stop() returns only once the broker has let go of the messages it handled.
    if (stopping) {
      await m.ackAck().catch((err: unknown) => warnRedelivery('ack', m, err));
    } else {
      safely('ack', m, () => m.ack());
    }
    return 'acked';
  }

  async function processMessage(m: JsMsg): Promise<void> {
    const parent = propagation.extract(ROOT_CONTEXT, m.headers, natsHeaderGetter);
    const msgId = header(m.headers, HEADERS.msgId);
    const attemptKey = `${spec.stream}:${spec.durable}:${m.seq}`;
    const links: Link[] = [];
    if (m.info.deliveryCount > 1) {
      busMetrics().redeliveries.add(1, { consumer: spec.durable });
      // The earlier attempt, from the attempt store; without a shared store an attempt in another
      // process still shares the trace (same PRODUCER parent) and is found by messaging.nats.stream.sequence.
      const previous = await attempts.recall(attemptKey).catch(() => undefined);
      if (previous) links.push(previousAttemptLink(previous));
    }
    const span = busTracer().startSpan(
      messagingSpanName('process', spec.filterSubject),
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          ...messagingAttributes('process', m.subject, spec.filterSubject),
          [ATTR.consumerGroup]: spec.durable,
          [ATTR.stream]: spec.stream,
          [ATTR.streamSequence]: m.seq,
          [ATTR.deliveryCount]: m.info.deliveryCount,
          [ATTR.bodySize]: m.data.byteLength,
          ...(msgId ? { [ATTR.messageId]: msgId } : {}),
        },
        links,
      },
      parent,
    );
    // A link to a span the sampler dropped leads nowhere: only sampled attempts are worth a store write
    // (with the shared store, a Redis write and delete per message that would otherwise buy nothing).
    const recorded = (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
    if (recorded) attempts.remember(attemptKey, span.spanContext());
    const started = performance.now();
    let outcome: Outcome = 'nacked';
    const timer = setInterval(() => safely('working', m, () => m.working()), heartbeatMs);
    timer.unref();
    try {
      outcome = await context.with(trace.setSpan(parent, span), () => handle(m, span));
      if (recorded && outcome !== 'nacked') attempts.forget(attemptKey);
    } catch (err) {
      // Only reached by a bug in this file; the message is left to ack_wait redelivery.
      logger.error({ ...log, ...errorFields(err), seq: m.seq }, 'message processing failed unexpectedly');
    } finally {
      clearInterval(timer);
      span.end();
      const labels = { stream: spec.stream, consumer: spec.durable, outcome };
      busMetrics().consumed.add(1, labels);
      busMetrics().handlerDuration.record((performance.now() - started) / 1000, labels);
    }
  }

  async function pump(msgs: ConsumerMessages): Promise<void> {
    const it = msgs[Symbol.asyncIterator]();
    for (;;) {
      // Take a slot before pulling: with prefetch 1 the next pull goes out only when a handler can run.
      const got = await slots.acquire();
      let r: IteratorResult<JsMsg>;
      try {
        r = await it.next();
      } catch (err) {
        if (got) slots.release();
        throw err;
      }
      if (r.done) {
        if (got) slots.release();
        return;
      }
      const m = r.value;
      if (!got || stopping) {
        safely('nak', m, () => m.nak());
        if (got) slots.release();
        continue;
      }
      const p: Promise<void> = processMessage(m).finally(() => {
        inflight.delete(p);
        slots.release();
      });
      inflight.add(p);
    }
  }

  const loop = (async () => {
    let failures = 0;
    while (!stopping) {
      try {
        await pump(messages);
        if (stopping) break;
        logger.warn(log, 'consumer iterator ended; restarting');
      } catch (err) {
        if (stopping) break;
        logger.error({ ...log, ...errorFields(err) }, 'consumer iterator failed; restarting');
      }
      await Promise.race([sleep(Math.min(30_000, 1_000 * 2 ** Math.min(failures++, 5))), stopRequested]);
      if (stopping) break;
      try {
        messages = await consumer.consume({ max_messages: prefetch, expires: PULL_EXPIRES_MS });
      } catch (err) {
        logger.error({ ...log, ...errorFields(err) }, 'could not restart the consumer');
        if ((err as Error).name === 'ClosedConnectionError') break;
      }
    }
  })();

  async function stop(stopOpts: StopOptions = {}): Promise<void> {
    const timeoutMs = stopOpts.timeoutMs ?? 25_000;
    const graceMs = stopOpts.abortGraceMs ?? 2_000;
    stopping = true;
    wake();
    slots.cancel();
    try {
      await messages.close();
    } catch (err) {
      logger.warn({ ...log, ...errorFields(err) }, 'closing the consumer failed');
    }
    const settled = (ms: number) =>
      Promise.race([Promise.allSettled([...inflight, loop]).then(() => true), sleep(ms).then(() => false)]);
    if (!(await settled(timeoutMs))) {
      logger.warn({ ...log, inFlight: inflight.size }, 'handlers still running at stop timeout; aborting them');
      abort.abort(new Error('consumer stopping'));
      if (!(await settled(graceMs))) {
        logger.error({ ...log, inFlight: inflight.size }, 'handlers ignored the abort; their messages return after ack_wait');
      }
    }
    logger.info(log, 'consumer stopped');
  }

  const unobserve = observeConsumer({
    stream: spec.stream,
    durable: spec.durable,
    get inFlight() {
      return inflight.size;
    },
    async lag() {
      const info = await consumer.info(false);
      return { pending: info.num_pending, ackPending: info.num_ack_pending };
    },
  });
  void stopRequested.then(unobserve);

  logger.info({ ...log, concurrency, prefetch }, 'consumer started');
  return {
    stop(stopOpts) {
      stopPromise ??= stop(stopOpts);
      return stopPromise;
    },
    get inFlight() {
      return inflight.size;
    },
  };
}

function header(h: MsgHdrs | undefined, key: string): string | undefined {
  if (!h || !h.has(key)) return undefined;
  return h.get(key) || undefined;
}
