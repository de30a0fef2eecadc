import { context, metrics, propagation, SpanKind, SpanStatusCode, trace, type Counter, type Histogram } from '@opentelemetry/api';
import { headers as natsHeaders, NoRespondersError, RequestError, TimeoutError, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  foldPluginReply, noPluginOutcome, HEADERS, PLUGIN_LIMITS, PluginCommandResult, PluginDiscover, PluginEventReply, PluginEventRequest, PluginRegistration, PluginRetrieveResult, PluginToolResult, pluginSubjects,
  type PluginBinding, type PluginCommand, type PluginCommandCall, type PluginEventName, type PluginEventOutcome, type PluginEventPayload, type PluginSubjects, type PluginTool, type PluginToolCall, type PluginRetrieveCall,
} from '@conveyor/contracts';
import { busTracer, natsHeaderSetter } from './otel.js';
import { DURATION_BUCKETS_SECONDS } from './metrics.js';
import { errorFields, silentLogger, type BusLogger } from './logger.js';
import { describeIssues } from './validate.js';
import { objectSchemaProblem } from './object-schema.js';

/** How one call ended; every value but `ok` means the plugin's answer was not used. */
export type PluginCallResult = 'ok' | 'timeout' | 'no_responders' | 'malformed' | 'error' | 'too_large';

export const PLUGIN_METRICS = {
  calls: 'conveyor_plugin_calls',
  callDuration: 'conveyor_plugin_call_duration_seconds',
  skipped: 'conveyor_plugin_calls_skipped',
} as const;

interface PluginInstruments {
  calls: Counter;
  callDuration: Histogram;
  skipped: Counter;
}
let instruments: PluginInstruments | undefined;
function pluginMetrics(): PluginInstruments {
  if (instruments) return instruments;
  const meter = metrics.getMeter('@conveyor/bus');
  instruments = {
    calls: meter.createCounter(PLUGIN_METRICS.calls, { description: 'Plugin event calls, by plugin, event and result (ok, timeout, no_responders, malformed, error, too_large)' }),
    callDuration: meter.createHistogram(PLUGIN_METRICS.callDuration, { description: 'Time from a plugin event request to its answer or timeout', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS_SECONDS } }),
    skipped: meter.createCounter(PLUGIN_METRICS.skipped, { description: 'Plugins not called for an event because more than the cap were bound, or the event was over the payload bound' }),
  };
  return instruments;
}

interface Registered {
  registration: PluginRegistration;
  lastHeartbeatAt: number;
  expiresAt: number;
}

/** A live registration and when its last heartbeat came (epoch ms). */
export interface PluginRegistrationState {
  registration: PluginRegistration;
  lastHeartbeatAt: number;
  expiresAt: number;
}

export interface PluginHostOptions {
  logger?: BusLogger;
  now?: () => number;
  /** Told of every call's outcome and time (cluster-wide statistics); must not throw or block. */
  onCall?: (call: { plugin: string; result: PluginCallResult; ms: number }) => void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const REJECTION_LOG_INTERVAL_MS = 60_000;

/**
 * A service's view of the plugin runtime: the registry the plugins' heartbeats keep (in memory, per
 * process; a registration lapses `ttlMs` after its last heartbeat) and the calls. Each call is a CLIENT
 * span whose context travels in the request's W3C headers; a slow, absent, failing or malformed plugin
 * costs at most its timeout, is logged and counted, and its answer is dropped.
 */
export class PluginHost {
  readonly #nc: NatsConnection;
  readonly #subjects: PluginSubjects;
  readonly #logger: BusLogger;
  readonly #now: () => number;
  readonly #onCall: NonNullable<PluginHostOptions['onCall']>;
  readonly #plugins = new Map<string, Registered>();
  #subscription: Subscription | undefined;
  /** A misconfigured plugin repeats its bad heartbeat every few seconds: one warning per interval is enough. */
  #lastRejectionLoggedAt = Number.NEGATIVE_INFINITY;
  #rejectionsSinceLog = 0;

  constructor(nc: NatsConnection, prefix: string, opts: PluginHostOptions = {}) {
    this.#nc = nc;
    this.#subjects = pluginSubjects(prefix);
    this.#logger = opts.logger ?? silentLogger;
    this.#now = opts.now ?? Date.now;
    this.#onCall = opts.onCall ?? (() => undefined);
  }

  /** Subscribes to heartbeats and asks every running plugin for one at once. */
  async start(): Promise<this> {
    this.#subscription = this.#nc.subscribe(this.#subjects.heartbeat, {
      callback: (err, msg) => {
        if (err) return;
        this.register(msg.data);
      },
    });
    // The subscription must be known to the server before plugins answer the discovery.
    await this.#nc.flush();
    this.#nc.publish(this.#subjects.discover, encoder.encode(JSON.stringify(PluginDiscover.parse({ v: 1 }))));
    return this;
  }

  stop(): void {
    this.#subscription?.unsubscribe();
    this.#subscription = undefined;
  }

  /** Takes one heartbeat; returns whether it was accepted. */
  register(data: Uint8Array): boolean {
    let parsed;
    try {
      parsed = PluginRegistration.safeParse(JSON.parse(decoder.decode(data)));
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) return this.#reject(parsed ? describeIssues(parsed.error) : 'not JSON');
    const registration = parsed.data;
    const known = this.#plugins.get(registration.name);
    // Schemas are compiled once per change, not at every heartbeat.
    if (registration.tools.length > 0 && JSON.stringify(known?.registration.tools) !== JSON.stringify(registration.tools)) {
      for (const tool of registration.tools) {
        const problem = objectSchemaProblem(tool.parameters);
        if (problem) return this.#reject(`plugin ${registration.name}, tool ${tool.name}: the argument schema ${problem}`);
      }
    }
    if (registration.settings && JSON.stringify(known?.registration.settings) !== JSON.stringify(registration.settings)) {
      const problem = objectSchemaProblem(registration.settings);
      if (problem) return this.#reject(`plugin ${registration.name}: the settings schema ${problem}`);
    }
    if (!known) {
      this.#prune();
      if (this.#plugins.size >= PLUGIN_LIMITS.registered) {
        this.#logger.warn({ plugin: registration.name, registered: this.#plugins.size }, 'plugin registry full; heartbeat ignored');
        return false;
      }
      this.#logger.info({ plugin: registration.name, events: registration.events, priority: registration.priority, timeoutMs: registration.timeoutMs }, 'plugin registered');
    }
    const now = this.#now();
    this.#plugins.set(registration.name, { registration, lastHeartbeatAt: now, expiresAt: now + registration.ttlMs });
    return true;
  }

  /** A heartbeat refused: logged at most once per interval with the count, since it repeats every few seconds. */
  #reject(reason: string): false {
    this.#rejectionsSinceLog++;
    if (this.#now() - this.#lastRejectionLoggedAt >= REJECTION_LOG_INTERVAL_MS) {
      this.#logger.warn({ reason, rejected: this.#rejectionsSinceLog }, 'plugin heartbeat rejected');
      this.#lastRejectionLoggedAt = this.#now();
      this.#rejectionsSinceLog = 0;
    }
    return false;
  }

  #prune(): void {
    const now = this.#now();
    for (const [name, p] of this.#plugins) {
      if (p.expiresAt <= now) {
        this.#plugins.delete(name);
        this.#logger.info({ plugin: name }, 'plugin registration expired');
      }
    }
  }

  /** Every live registration, by name (what the admin API lists). */
  registrations(): PluginRegistrationState[] {
    this.#prune();
    return [...this.#plugins.values()].map((p) => ({ ...p })).sort((a, b) => (a.registration.name < b.registration.name ? -1 : a.registration.name > b.registration.name ? 1 : 0));
  }

  /** Live registrations bound by the pipeline that want the event, in call order: priority high to low, then name. */
  forEvent(event: PluginEventName, binding: PluginBinding): PluginRegistration[] {
    const now = this.#now();
    const bound = binding === 'all' ? null : new Set(binding);
    return [...this.#plugins.values()]
      .filter((p) => p.expiresAt > now && p.registration.events.includes(event) && (!bound || bound.has(p.registration.name)))
      .map((p) => p.registration)
      .sort((a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Calls the bound plugins for the event one after another (each sees the event as the ones before
   * left it) until one answers prevent_postorder or all are called, at most PLUGIN_LIMITS.callsPerEvent.
   * Never throws for a plugin's failure.
   */
  async emit(request: Omit<PluginEventRequest, 'v'>, binding: PluginBinding): Promise<PluginEventOutcome> {
    const outcome = noPluginOutcome();
    const eventName = request.event.event_name;
    const plugins = this.forEvent(eventName, binding);
    if (plugins.length === 0) return outcome;
    if (plugins.length > PLUGIN_LIMITS.callsPerEvent) {
      const skipped = plugins.splice(PLUGIN_LIMITS.callsPerEvent);
      pluginMetrics().skipped.add(skipped.length, { event: eventName, reason: 'cap' });
      this.#logger.warn({ queryId: request.queryId, event: eventName, skipped: skipped.map((p) => p.name) }, 'more plugins bound than may be called for one event; the lowest priorities skipped');
    }
    let event = request.event;
    for (const plugin of plugins) {
      const reply = await this.#call(plugin, { v: 1, ...request, event });
      if (!reply) continue;
      event = foldPluginReply(outcome, event, reply, plugin.name);
      if (reply.prevent_postorder) break;
    }
    return outcome;
  }

  /** Tools of the live plugins the pipeline binds, in plugin-name order (which decides a name clash). */
  toolsFor(binding: PluginBinding): OfferedPluginTool[] {
    const now = this.#now();
    const bound = binding === 'all' ? null : new Set(binding);
    return [...this.#plugins.values()]
      .filter((p) => p.expiresAt > now && p.registration.tools.length > 0 && (!bound || bound.has(p.registration.name)))
      .map((p) => p.registration)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .flatMap((plugin) => plugin.tools.map((tool) => ({ plugin, tool })));
  }

  /**
   * Calls one of a plugin's tools for a run: at most the plugin's timeout, on any
   * of its instances (they share the plugin's queue group). Throws PluginCallError, by code, when the
   * plugin gave no usable answer; a result the plugin marks `is_error` is returned as it is.
   */
  async callTool(plugin: PluginRegistration, call: Omit<PluginToolCall, 'v'>): Promise<PluginToolResult> {
    const outcome = await this.#exchange(plugin, { v: 1, ...call }, PluginToolResult, {
      schema: 'PluginToolCall/1', queryId: call.queryId, spanName: `plugin ${plugin.name} tool ${call.tool}`, attrs: { plugin: plugin.name, event: 'tool', tool: call.tool },
    });
    if (outcome.reply) return outcome.reply;
    const code = outcome.result === 'ok' ? 'malformed' : outcome.result;
    throw new PluginCallError(code, callFailure(plugin, call.tool, code, outcome.detail));
  }

  /** Commands of the live plugins the pipeline binds; of two with one name, the first plugin by name wins. */
  commandsFor(binding: PluginBinding): OfferedPluginCommand[] {
    const now = this.#now();
    const bound = binding === 'all' ? null : new Set(binding);
    const seen = new Map<string, OfferedPluginCommand>();
    const plugins = [...this.#plugins.values()]
      .filter((p) => p.expiresAt > now && p.registration.commands.length > 0 && (!bound || bound.has(p.registration.name)))
      .map((p) => p.registration)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const plugin of plugins) for (const command of plugin.commands) if (!seen.has(command.name)) seen.set(command.name, { plugin, command });
    return [...seen.values()];
  }

  /** Runs one of a plugin's commands; throws PluginCallError, by code, when the plugin gave no usable answer. */
  async callCommand(plugin: PluginRegistration, call: Omit<PluginCommandCall, 'v'>): Promise<PluginCommandResult> {
    const outcome = await this.#exchange(plugin, { v: 1, ...call }, PluginCommandResult, {
      schema: 'PluginCommandCall/1', queryId: call.queryId, spanName: `plugin ${plugin.name} command ${call.command}`, attrs: { plugin: plugin.name, event: 'command', command: call.command },
    });
    if (outcome.reply) return outcome.reply;
    const code = outcome.result === 'ok' ? 'malformed' : outcome.result;
    throw new PluginCallError(code, callFailure(plugin, call.command, code, outcome.detail));
  }

  /**
   * Asks a live plugin's retriever for a knowledge base's chunks. Throws PluginCallError when the
   * plugin is not registered, offers no such retriever, or gives no usable answer.
   */
  async callRetriever(pluginName: string, call: Omit<PluginRetrieveCall, 'v'>): Promise<PluginRetrieveResult> {
    const live = this.#plugins.get(pluginName);
    const plugin = live && live.expiresAt > this.#now() ? live.registration : undefined;
    if (!plugin || !plugin.retrievers.some((r) => r.name === call.retriever)) {
      throw new PluginCallError('no_responders', `plugin ${pluginName} is not running or offers no retriever ${call.retriever}`);
    }
    const outcome = await this.#exchange(plugin, { v: 1, ...call }, PluginRetrieveResult, {
      schema: 'PluginRetrieveCall/1', queryId: call.queryId, spanName: `plugin ${plugin.name} retrieve ${call.retriever}`, attrs: { plugin: plugin.name, event: 'retrieve', retriever: call.retriever },
    });
    if (outcome.reply) return outcome.reply;
    const code = outcome.result === 'ok' ? 'malformed' : outcome.result;
    throw new PluginCallError(code, callFailure(plugin, `retriever ${call.retriever}`, code, outcome.detail));
  }

  async #call(plugin: PluginRegistration, request: PluginEventRequest): Promise<PluginEventReply | null> {
    const eventName = request.event.event_name;
    const outcome = await this.#exchange(plugin, request, PluginEventReply, {
      schema: 'PluginEventRequest/1', queryId: request.queryId, spanName: `plugin ${plugin.name} ${eventName}`, attrs: { plugin: plugin.name, event: eventName },
    });
    return outcome.reply;
  }

  /**
   * One request to a plugin and its answer, checked against `schema`: a CLIENT span with the trace
   * context in the request's headers, bounded by the plugin's timeout and the payload bound, counted
   * and timed by result. Never throws: a failure is the result, logged once here.
   */
  async #exchange<T>(
    plugin: PluginRegistration,
    body: object,
    schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof describeIssues>[0] } },
    o: { schema: string; queryId: string; spanName: string; attrs: Record<string, string> },
  ): Promise<{ result: PluginCallResult; reply: T | null; detail?: string }> {
    const { attrs, queryId } = o;
    const data = encoder.encode(JSON.stringify(body));
    if (data.byteLength > PLUGIN_LIMITS.payloadBytes) {
      pluginMetrics().calls.add(1, { ...attrs, result: 'too_large' });
      this.#onCall({ plugin: plugin.name, result: 'too_large', ms: 0 });
      this.#logger.warn({ queryId, ...attrs, bytes: data.byteLength }, 'plugin call over the payload bound; plugin not called');
      return { result: 'too_large', reply: null };
    }
    const subject = this.#subjects.call(plugin.name);
    const span = busTracer().startSpan(o.spanName, {
      kind: SpanKind.CLIENT,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'conveyor.plugin.name': plugin.name, 'conveyor.plugin.event': attrs.event!, ...(attrs.tool ? { 'conveyor.plugin.tool': attrs.tool } : {}), ...(attrs.command ? { 'conveyor.plugin.command': attrs.command } : {}), 'conveyor.query_id': queryId },
    });
    const h = natsHeaders();
    h.set(HEADERS.queryId, queryId);
    h.set(HEADERS.schema, o.schema);
    propagation.inject(trace.setSpan(context.active(), span), h, natsHeaderSetter);
    const started = performance.now();
    let result: PluginCallResult = 'ok';
    let reply: T | null = null;
    let detail: string | undefined;
    try {
      const msg = await this.#nc.request(subject, data, { timeout: plugin.timeoutMs, headers: h });
      const pluginError = msg.headers?.get(HEADERS.pluginError);
      if (pluginError) {
        result = 'error';
        detail = pluginError.slice(0, 500);
        this.#logger.warn({ queryId, ...attrs, pluginError: detail }, 'plugin reported a failure; going on without it');
      } else if (msg.data.byteLength > PLUGIN_LIMITS.payloadBytes) {
        result = 'too_large';
      } else {
        let json: unknown;
        try {
          json = JSON.parse(decoder.decode(msg.data));
        } catch {
          json = undefined;
        }
        const parsed = schema.safeParse(json);
        if (parsed.success) reply = parsed.data;
        else {
          result = 'malformed';
          detail = json === undefined ? 'not JSON' : describeIssues(parsed.error);
          this.#logger.warn({ queryId, ...attrs, reason: detail }, 'plugin answered with a malformed reply; ignored');
        }
      }
    } catch (err) {
      result = classifyRequestError(err);
      this.#logger.warn({ queryId, ...attrs, result, timeoutMs: plugin.timeoutMs, ...errorFields(err) }, 'plugin call failed; going on without it');
    } finally {
      const seconds = (performance.now() - started) / 1000;
      pluginMetrics().calls.add(1, { ...attrs, result });
      pluginMetrics().callDuration.record(seconds, attrs);
      this.#onCall({ plugin: plugin.name, result, ms: seconds * 1000 });
      span.setAttribute('conveyor.plugin.result', result);
      if (result !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: result });
      span.end();
    }
    return { result, reply, ...(detail ? { detail } : {}) };
  }
}

/** A live plugin's tool, as a run is offered it. */
export interface OfferedPluginTool {
  plugin: PluginRegistration;
  tool: PluginTool;
}

/** A live plugin's command, as a chat may run it. */
export interface OfferedPluginCommand {
  plugin: PluginRegistration;
  command: PluginCommand;
}

/** A tool or command call the plugin gave no usable answer to; `code` says why. */
export class PluginCallError extends Error {
  constructor(readonly code: Exclude<PluginCallResult, 'ok'>, message: string) {
    super(message);
    this.name = 'PluginCallError';
  }
}

/** What the model (for a tool) or the chat (for a command) is told when a plugin gave no answer. */
function callFailure(plugin: PluginRegistration, what: string, result: PluginCallResult, detail?: string): string {
  switch (result) {
    case 'timeout': return `plugin ${plugin.name} did not answer ${what} within ${plugin.timeoutMs} ms`;
    case 'no_responders': return `plugin ${plugin.name} is not running; ${what} is unavailable`;
    case 'too_large': return `the call to ${what} or its answer is over ${PLUGIN_LIMITS.payloadBytes} bytes`;
    case 'malformed': return `plugin ${plugin.name} answered ${what} with something that is no result${detail ? ` (${detail})` : ''}`;
    default: return `plugin ${plugin.name} failed in ${what}${detail ? `: ${detail}` : ''}`;
  }
}

/** A failed request by its error class: the plugin was too slow, is not running, or something else. */
export function classifyRequestError(err: unknown): Exclude<PluginCallResult, 'ok' | 'malformed' | 'too_large'> {
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof NoRespondersError) return 'no_responders';
  if (err instanceof RequestError && (err.isNoResponders() || err.cause instanceof NoRespondersError)) return 'no_responders';
  if (err instanceof Error && err.cause instanceof TimeoutError) return 'timeout';
  return 'error';
}
