import { randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  EVENT_NAMES, LIMITS, PLUGIN_ERROR_HEADER, pluginSubjects,
  type ContentElement, type EventName, type EventOf, type EventReply, type EventRequest, type MessageChain, type Registration,
} from './wire.js';

/** What a handler may do with an event, after LangBot's `EventContext`. */
export interface EventContext<N extends EventName = EventName> {
  /** The event; for PromptPreProcessing, change `default_prompt` and `prompt` in place or replace them. */
  readonly event: EventOf<N>;
  readonly queryId: string;
  readonly botId: string;
  readonly pipelineId: string;
  /** W3C trace context of the call (`traceparent`, `tracestate`), to continue Conveyor's trace in the plugin. */
  readonly traceContext: { traceparent?: string; tracestate?: string };
  /** Stop Conveyor's default behaviour for this event (no runner; no reply unless `reply` is set). */
  preventDefault(): void;
  /** Plugins after this one are not called for this event. */
  preventPostorder(): void;
  /** With preventDefault on the NormalMessageReceived events: this chain is the answer. On NormalMessageResponded: sent instead of the text. */
  reply(chain: MessageChain): void;
  /** On the NormalMessageReceived events: replaces the user's message before the runner (a string, one element or a list). */
  alterUserMessage(alter: string | ContentElement | ContentElement[]): void;
}

export type EventHandler<N extends EventName> = (ctx: EventContext<N>) => void | Promise<void>;
export type Handlers = { [N in EventName]?: EventHandler<N> };

export interface PluginOptions {
  /** `author/name`, unique in the deployment. */
  name: string;
  /** The plugin's version, as operators see it in the console's plugin list (at most 64 characters). */
  version?: string;
  handlers: Handlers;
  /** Higher is called first. Default 0. */
  priority?: number;
  /** How long Conveyor waits for one answer before going on without it. Default 5000, at most 30000. */
  timeoutMs?: number;
  /** How often the plugin announces itself. Default 2000; the registration lapses after three missed beats. */
  heartbeatMs?: number;
  /** Conveyor's subject prefix (`CONVEYOR_SUBJECT_PREFIX`). Default `conveyor`. */
  prefix?: string;
  /**
   * An open connection; otherwise the SDK connects to `natsUrl` (default `nats://127.0.0.1:4222`; the
   * nodes of a cluster comma-separated, as the services' NATS_URL) and closes it on `stop`.
   */
  nc?: NatsConnection;
  natsUrl?: string;
  /** The NATS user and password of a deployment whose server requires them (Conveyor's generated config names a `plugin` user). */
  natsUser?: string;
  natsPassword?: string;
  /** Calls handled at once by this process; more are answered with an error at once. Default 64. */
  maxConcurrent?: number;
  /** Where handler failures are reported. Default console.error. */
  onError?: (err: unknown, event: EventName) => void;
}

export interface RunningPlugin {
  readonly registration: Registration;
  /** Stops answering and heartbeating; Conveyor sees no responder at once and drops the registration at its expiry. */
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Starts a plugin: registers it, keeps the registration alive and answers Conveyor's event calls. */
export async function runPlugin(opts: PluginOptions): Promise<RunningPlugin> {
  const events = EVENT_NAMES.filter((e) => opts.handlers[e] !== undefined);
  if (events.length === 0) throw new Error('a plugin needs at least one event handler');
  const heartbeatMs = opts.heartbeatMs ?? 2_000;
  const registration: Registration = {
    v: 1,
    name: opts.name,
    ...(opts.version ? { version: opts.version } : {}),
    instanceId: randomUUID(),
    events,
    priority: opts.priority ?? 0,
    timeoutMs: Math.min(Math.max(1, Math.round(opts.timeoutMs ?? 5_000)), LIMITS.maxTimeoutMs),
    ttlMs: Math.min(Math.max(heartbeatMs * 3, LIMITS.minTtlMs), LIMITS.maxTtlMs),
  };
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(registration.name)) throw new Error(`plugin name ${JSON.stringify(registration.name)} must be author/name`);
  const subjects = pluginSubjects(opts.prefix ?? 'conveyor');
  const ownConnection = !opts.nc;
  const nc = opts.nc ?? (await connect({ servers: natsServers(opts.natsUrl ?? 'nats://127.0.0.1:4222'), name: `plugin ${registration.name}`, user: opts.natsUser, pass: opts.natsPassword }));
  const maxConcurrent = opts.maxConcurrent ?? 64;
  const onError = opts.onError ?? ((err, event) => console.error(`plugin ${registration.name}: ${event} handler failed:`, err));
  let running = 0;

  const announce = () => nc.publish(subjects.heartbeat, encoder.encode(JSON.stringify(registration)));
  const subscriptions: Subscription[] = [
    nc.subscribe(subjects.discover, { callback: (err) => void (err || announce()) }),
    nc.subscribe(subjects.call(registration.name), {
      queue: registration.name,
      callback: (err, msg) => {
        if (err) return;
        if (running >= maxConcurrent) return respondError(msg, 'busy');
        running++;
        void answer(msg, opts.handlers, onError).finally(() => running--);
      },
    }),
  ];
  await nc.flush();
  announce();
  const beat = setInterval(announce, heartbeatMs);

  return {
    registration,
    async stop() {
      clearInterval(beat);
      for (const s of subscriptions) s.unsubscribe();
      if (ownConnection) await nc.drain();
    },
  };
}

function respondError(msg: Msg, message: string): void {
  const h = natsHeaders();
  h.set(PLUGIN_ERROR_HEADER, message.slice(0, 500).replace(/[\r\n]+/g, ' '));
  msg.respond(new Uint8Array(), { headers: h });
}

async function answer(msg: Msg, handlers: Handlers, onError: NonNullable<PluginOptions['onError']>): Promise<void> {
  let request: EventRequest;
  try {
    request = JSON.parse(decoder.decode(msg.data)) as EventRequest;
  } catch {
    return respondError(msg, 'request is not JSON');
  }
  const name = request.event?.event_name;
  const handler = handlers[name] as EventHandler<EventName> | undefined;
  if (!handler) return respondError(msg, `no handler for ${String(name)}`);
  const reply: EventReply = { v: 1, prevent_default: false, prevent_postorder: false };
  const ctx: EventContext = {
    event: request.event,
    queryId: request.queryId,
    botId: request.botId,
    pipelineId: request.pipelineId,
    traceContext: { traceparent: msg.headers?.get('traceparent') || undefined, tracestate: msg.headers?.get('tracestate') || undefined },
    preventDefault: () => void (reply.prevent_default = true),
    preventPostorder: () => void (reply.prevent_postorder = true),
    reply: (chain) => void (reply.reply_message_chain = chain),
    alterUserMessage: (alter) => void (reply.user_message_alter = alter),
  };
  try {
    await handler(ctx);
  } catch (err) {
    onError(err, name);
    return respondError(msg, err instanceof Error ? err.message : String(err));
  }
  if (request.event.event_name === 'PromptPreProcessing') {
    reply.default_prompt = request.event.default_prompt;
    reply.prompt = request.event.prompt;
  }
  const data = encoder.encode(JSON.stringify(reply));
  if (data.byteLength > LIMITS.payloadBytes) return respondError(msg, `reply of ${data.byteLength} bytes is over the ${LIMITS.payloadBytes}-byte bound`);
  msg.respond(data);
}

/** `natsUrl` as the client's server list: one URL, or several comma-separated (a cluster's nodes). */
export function natsServers(natsUrl: string): string[] {
  const servers = natsUrl.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (servers.length === 0) throw new Error(`natsUrl names no server: ${JSON.stringify(natsUrl)}`);
  return servers;
}
