import { context, metrics, propagation, SpanKind, SpanStatusCode, type Counter, type Histogram } from '@opentelemetry/api';
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  HEADERS, PLUGIN_LIMITS, PluginHostReply, PluginHostRequest, PluginHostStreamChunk, pluginSubjects, subjectToken,
  type PluginHostErrorCode,
} from '@conveyor/contracts';
import { busTracer, natsHeaderGetter } from './otel.js';
import { DURATION_BUCKETS_SECONDS } from './metrics.js';
import { silentLogger, type BusLogger } from './logger.js';
import { describeIssues } from './validate.js';

/** Answers one host call; `emit` sends a streamed answer's text before the final result. */
export type PluginHostHandler = (request: PluginHostRequest, emit: (delta: string) => void, signal: AbortSignal) => Promise<Record<string, unknown>>;

export interface PluginHostServerOptions {
  logger?: BusLogger;
  /** The code and message the plugin reads for a failure; undefined: `internal` (logged, not shown). */
  classify: (err: unknown) => { code: PluginHostErrorCode; message: string } | undefined;
  /** Calls one process answers at once; more are answered `unavailable` at once. Default 64. */
  maxConcurrent?: number;
  /** Longest a call may take before it is aborted. Default PLUGIN_LIMITS.hostCallMs. */
  callMs?: number;
  /** The trace id of the current span, for log lines. */
  traceId?: () => string | undefined;
}

interface HostInstruments {
  calls: Counter;
  duration: Histogram;
}
let instruments: HostInstruments | undefined;
function hostMetrics(): HostInstruments {
  if (instruments) return instruments;
  const meter = metrics.getMeter('@conveyor/bus');
  instruments = {
    calls: meter.createCounter('conveyor_plugin_host_calls', { description: 'Plugins\' calls into Conveyor, by plugin, op and outcome (ok or the error code)' }),
    duration: meter.createHistogram('conveyor_plugin_host_call_duration_seconds', { description: 'Time to answer a plugin\'s call into Conveyor', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS_SECONDS } }),
  };
  return instruments;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The transport of the plugin host API: every plugin's host subject, in the queue group `plugin-host`
 * so replicas share the calls. A request is bounded in size and time and checked against its schema;
 * the plugin it names must be the one its subject was built for (a server giving each plugin its own
 * user lets it publish only there, so the subject is its identity). Each call is a SERVER span in the
 * plugin's trace, counted by outcome.
 */
export class PluginHostServer {
  readonly #nc: NatsConnection;
  readonly #subject: string;
  readonly #handler: PluginHostHandler;
  readonly #options: Required<Omit<PluginHostServerOptions, 'traceId'>> & Pick<PluginHostServerOptions, 'traceId'>;
  readonly #inFlight = new Set<AbortController>();
  #subscription: Subscription | undefined;

  constructor(nc: NatsConnection, prefix: string, handler: PluginHostHandler, options: PluginHostServerOptions) {
    this.#nc = nc;
    this.#subject = pluginSubjects(prefix).allHosts;
    this.#handler = handler;
    this.#options = { logger: silentLogger, maxConcurrent: 64, callMs: PLUGIN_LIMITS.hostCallMs, ...options };
  }

  async start(): Promise<void> {
    this.#subscription = this.#nc.subscribe(this.#subject, {
      queue: 'plugin-host',
      callback: (err, msg) => {
        if (err || !msg.reply) return;
        void this.#answer(msg);
      },
    });
    await this.#nc.flush();
  }

  /** Stops taking calls and aborts those in flight (each answers `unavailable`). */
  stop(): void {
    this.#subscription?.unsubscribe();
    this.#subscription = undefined;
    for (const controller of this.#inFlight) controller.abort(new Error('the runner is stopping'));
  }

  async #answer(msg: Msg): Promise<void> {
    const started = performance.now();
    const parent = propagation.extract(context.active(), msg.headers, natsHeaderGetter);
    const request = this.#parse(msg);
    const op = request.ok ? request.value.op : 'unknown';
    const plugin = request.ok ? request.value.plugin : 'unknown';
    await context.with(parent, () =>
      busTracer().startActiveSpan(`plugin-host ${op}`, { kind: SpanKind.SERVER, attributes: { 'conveyor.plugin.name': plugin, 'conveyor.plugin.host.op': op, 'messaging.destination.name': msg.subject } }, async (span) => {
        let outcome: string = 'ok';
        try {
          if (!request.ok) throw request;
          if (this.#inFlight.size >= this.#options.maxConcurrent) throw { code: 'unavailable', message: 'busy: too many calls at once; try again' } satisfies HostFailure;
          const controller = new AbortController();
          const timer = setTimeout(() => controller.abort(new Error(`no answer within ${this.#options.callMs} ms`)), this.#options.callMs);
          this.#inFlight.add(controller);
          try {
            const emit = (delta: string) => this.#send(msg.reply!, PluginHostStreamChunk.parse({ v: 1, delta }), 'PluginHostStreamChunk/1');
            const result = await this.#handler(request.value, emit, controller.signal);
            this.#send(msg.reply!, { v: 1, ok: true, result } satisfies PluginHostReply, 'PluginHostReply/1');
          } finally {
            clearTimeout(timer);
            this.#inFlight.delete(controller);
          }
        } catch (err) {
          const failure = isHostFailure(err) ? err : this.#options.classify(err);
          outcome = failure?.code ?? 'internal';
          if (!failure) this.#options.logger.error({ plugin, op, err: (err as Error)?.message, trace_id: this.#options.traceId?.() }, 'plugin host call failed');
          span.setStatus({ code: SpanStatusCode.ERROR, message: failure?.message ?? 'internal' });
          span.setAttribute('error.type', outcome);
          this.#send(msg.reply!, { v: 1, ok: false, error: { code: failure?.code ?? 'internal', message: (failure?.message ?? 'internal error; the runner logged it').slice(0, 2_000) } } satisfies PluginHostReply, 'PluginHostReply/1');
        } finally {
          const attributes = { 'conveyor.plugin.name': plugin, 'conveyor.plugin.host.op': op, outcome };
          hostMetrics().calls.add(1, attributes);
          hostMetrics().duration.record((performance.now() - started) / 1000, attributes);
          span.end();
        }
      }),
    );
  }

  #parse(msg: Msg): { ok: true; value: PluginHostRequest } | ({ ok: false } & HostFailure) {
    if (msg.data.byteLength > PLUGIN_LIMITS.payloadBytes) return { ok: false, code: 'invalid', message: `a request is at most ${PLUGIN_LIMITS.payloadBytes} bytes` };
    let body: unknown;
    try {
      body = JSON.parse(decoder.decode(msg.data));
    } catch {
      return { ok: false, code: 'invalid', message: 'the request is not JSON' };
    }
    const parsed = PluginHostRequest.safeParse(body);
    if (!parsed.success) return { ok: false, code: 'invalid', message: describeIssues(parsed.error) };
    const token = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
    if (subjectToken(parsed.data.plugin) !== token) {
      this.#options.logger.warn({ plugin: parsed.data.plugin, subject: msg.subject }, 'plugin host call refused: the plugin named is not the one of its subject');
      return { ok: false, code: 'forbidden', message: `plugin ${parsed.data.plugin} calls on its own host subject only` };
    }
    return { ok: true, value: parsed.data };
  }

  #send(reply: string, body: object, schema: string): void {
    const headers = natsHeaders();
    headers.set(HEADERS.schema, schema);
    let data = encoder.encode(JSON.stringify(body));
    if (data.byteLength > PLUGIN_LIMITS.payloadBytes) {
      data = encoder.encode(JSON.stringify({ v: 1, ok: false, error: { code: 'too_large', message: `the answer is over the ${PLUGIN_LIMITS.payloadBytes}-byte bound` } } satisfies PluginHostReply));
    }
    this.#nc.publish(reply, data, { headers });
  }
}

interface HostFailure {
  code: PluginHostErrorCode;
  message: string;
}

function isHostFailure(err: unknown): err is HostFailure {
  return typeof err === 'object' && err !== null && 'code' in err && 'message' in err && !(err instanceof Error);
}
