import { randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  COMMAND_CALL_SCHEMA, EVENT_NAMES, LIMITS, PLUGIN_ERROR_HEADER, RETRIEVE_CALL_SCHEMA, SCHEMA_HEADER, TOOL_CALL_SCHEMA, pluginSubjects,
  type CommandCallRequest, type CommandResult, type ContentElement, type EventName, type EventOf, type EventReply, type EventRequest,
  type MessageChain, type Registration, type RetrieveCallRequest, type RetrieveResult, type ToolCallRequest, type ToolDeclaration, type ToolResult,
} from './wire.js';
import { hostClient, type Host } from './host.js';

/** What a handler may do with an event, after LangBot's `EventContext`. */
export interface EventContext<N extends EventName = EventName> {
  /** The event; for PromptPreProcessing, change `default_prompt` and `prompt` in place or replace them. */
  readonly event: EventOf<N>;
  readonly queryId: string;
  readonly botId: string;
  readonly pipelineId: string;
  /** W3C trace context of the call (`traceparent`, `tracestate`), to continue Conveyor's trace in the plugin. */
  readonly traceContext: { traceparent?: string; tracestate?: string };
  /** Calls into Conveyor: storage, models, knowledge. */
  readonly host: Host;
  /** The plugin's settings for this call's pipeline (the installation's, with the pipeline's over them); kept until an admin changes them. */
  settings(): Promise<Record<string, unknown>>;
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

/** What a tool's handler knows of the call besides its arguments. */
export interface ToolContext {
  readonly queryId: string;
  readonly botId: string;
  readonly pipelineId: string;
  /** W3C trace context of the call, to continue Conveyor's trace in the plugin. */
  readonly traceContext: { traceparent?: string; tracestate?: string };
  /** Calls into Conveyor: storage, models, knowledge. */
  readonly host: Host;
  /** The plugin's settings for this call's pipeline (the installation's, with the pipeline's over them); kept until an admin changes them. */
  settings(): Promise<Record<string, unknown>>;
}

/**
 * A tool for the local agent (LangBot's plugin Tool component). The handler's text or content parts go
 * to the model; a thrown error goes to it as the tool's error.
 */
export interface Tool extends ToolDeclaration {
  handler: (args: Record<string, unknown>, ctx: ToolContext) => string | ContentElement[] | Promise<string | ContentElement[]>;
}

/** What a command's handler knows besides its parameters (LangBot's `ExecuteContext`). */
export interface CommandContext extends ToolContext {
  readonly textMessage: string;
  readonly launcherType: 'person' | 'group';
  readonly launcherId: string;
  readonly senderId: string;
  /** Whether the chat is one of the instance's command admins. */
  readonly isAdmin: boolean;
}

/** A `!`-command (LangBot's plugin Command component): its reply text goes to the chat; a thrown error's message too. */
export interface Command {
  name: string;
  help?: string;
  /** Only chats named in the instance's `command.admins` may run it. */
  adminOnly?: boolean;
  handler: (params: string[], ctx: CommandContext) => string | Promise<string>;
}

/** What a retriever's handler knows besides the question. */
export interface RetrieveContext extends ToolContext {
  readonly knowledgeBaseId: string;
}

/**
 * A knowledge retriever (LangBot's KnowledgeRetriever component): a knowledge base created with it as
 * its source asks the handler for chunks, best first, instead of searching documents.
 */
export interface Retriever {
  name: string;
  description?: string;
  handler: (query: string, topK: number, ctx: RetrieveContext) => Array<{ text: string; score?: number; source?: string }> | Promise<Array<{ text: string; score?: number; source?: string }>>;
}

export interface PluginOptions {
  /** `author/name`, unique in the deployment. */
  name: string;
  /** The plugin's version, as operators see it in the console's plugin list (at most 64 characters). */
  version?: string;
  /** Event handlers; a plugin that only offers tools has none. */
  handlers?: Handlers;
  /** Tools the local agent may call, in pipelines that bind this plugin. */
  tools?: Tool[];
  /** `!`-commands chats may run, in pipelines that bind this plugin. */
  commands?: Command[];
  /** Knowledge retrievers a knowledge base may be backed by. */
  retrievers?: Retriever[];
  /**
   * JSON Schema (an object schema) of the settings an admin fills in, per installation and per
   * pipeline, in the console or the admin API; `writeOnly: true` or `format: "password"` marks a secret.
   * Read them with `ctx.settings()`; they change without a restart.
   */
  settings?: Record<string, unknown>;
  /** Called when an admin changed the settings (of the installation, `pipelineId` null, or of a pipeline). */
  onSettingsChanged?: (pipelineId: string | null) => void;
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
  /** Where handler failures are reported (`event` is the event's name, `tool:<name>` or `command:<name>`). Default console.error. */
  onError?: (err: unknown, event: string) => void;
}

export interface RunningPlugin {
  readonly registration: Registration;
  /** Calls into Conveyor outside a handler (a timer, say): storage, models, knowledge. */
  readonly host: Host;
  /** The plugin's settings: the installation's, with a pipeline's over them when one is named; kept until an admin changes them. */
  settings(pipelineId?: string): Promise<Record<string, unknown>>;
  /** Stops answering and heartbeating; Conveyor sees no responder at once and drops the registration at its expiry. Calling it again waits for the first stop. */
  stop(): Promise<void>;
}

/** What every call's context reaches besides the call itself. */
interface CallEnv {
  host: Host;
  settings(pipelineId?: string): Promise<Record<string, unknown>>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Starts a plugin: registers it, keeps the registration alive and answers Conveyor's event calls. */
export async function runPlugin(opts: PluginOptions): Promise<RunningPlugin> {
  const handlers = opts.handlers ?? {};
  const tools = opts.tools ?? [];
  const commands = opts.commands ?? [];
  const retrievers = opts.retrievers ?? [];
  if (retrievers.length > LIMITS.retrieversPerPlugin) throw new Error(`a plugin offers at most ${LIMITS.retrieversPerPlugin} retrievers`);
  for (const r of retrievers) if (!/^[A-Za-z0-9_-]{1,64}$/.test(r.name)) throw new Error(`retriever name ${JSON.stringify(r.name)} must be 1 to 64 of A-Z a-z 0-9 _ -`);
  const events = EVENT_NAMES.filter((e) => handlers[e] !== undefined);
  if (events.length === 0 && tools.length === 0 && commands.length === 0 && retrievers.length === 0) throw new Error('a plugin needs at least one event handler, tool, command or retriever');
  if (commands.length > LIMITS.commandsPerPlugin) throw new Error(`a plugin offers at most ${LIMITS.commandsPerPlugin} commands`);
  for (const c of commands) if (!/^[A-Za-z0-9_-]{1,32}$/.test(c.name)) throw new Error(`command name ${JSON.stringify(c.name)} must be 1 to 32 of A-Z a-z 0-9 _ -`);
  if (new Set(commands.map((c) => c.name)).size !== commands.length) throw new Error('two commands share a name');
  if (tools.length > LIMITS.toolsPerPlugin) throw new Error(`a plugin offers at most ${LIMITS.toolsPerPlugin} tools`);
  for (const t of tools) if (!/^[A-Za-z0-9_-]{1,64}$/.test(t.name)) throw new Error(`tool name ${JSON.stringify(t.name)} must be 1 to 64 of A-Z a-z 0-9 _ -`);
  if (new Set(tools.map((t) => t.name)).size !== tools.length) throw new Error('two tools share a name');
  const heartbeatMs = opts.heartbeatMs ?? 2_000;
  const registration: Registration = {
    v: 1,
    name: opts.name,
    ...(opts.version ? { version: opts.version } : {}),
    ...(opts.settings ? { settings: opts.settings } : {}),
    instanceId: randomUUID(),
    events,
    tools: tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
    commands: commands.map(({ name, help, adminOnly }) => ({ name, help: help ?? '', adminOnly: adminOnly ?? false })),
    retrievers: retrievers.map(({ name, description }) => ({ name, description: description ?? '' })),
    priority: opts.priority ?? 0,
    timeoutMs: Math.min(Math.max(1, Math.round(opts.timeoutMs ?? 5_000)), LIMITS.maxTimeoutMs),
    ttlMs: Math.min(Math.max(heartbeatMs * 3, LIMITS.minTtlMs), LIMITS.maxTtlMs),
  };
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(registration.name)) throw new Error(`plugin name ${JSON.stringify(registration.name)} must be author/name`);
  const subjects = pluginSubjects(opts.prefix ?? 'conveyor');
  const ownConnection = !opts.nc;
  // Its own inbox prefix: a server giving the plugin a user of its own lets only it read its answers there.
  const nc = opts.nc ?? (await connect({ servers: natsServers(opts.natsUrl ?? 'nats://127.0.0.1:4222'), name: `plugin ${registration.name}`, user: opts.natsUser, pass: opts.natsPassword, inboxPrefix: subjects.inboxPrefix(registration.name) }));
  const host = hostClient(nc, opts.prefix ?? 'conveyor', registration.name);
  // Settings are read once per pipeline and kept until Conveyor says an admin changed them.
  const settingsCache = new Map<string, Promise<Record<string, unknown>>>();
  const settingsOf = (pipelineId?: string) => {
    const key = pipelineId ?? '';
    let values = settingsCache.get(key);
    if (!values) {
      values = host.settings(pipelineId);
      settingsCache.set(key, values);
      // A failed read is not kept: the next call asks again.
      values.catch(() => settingsCache.delete(key));
    }
    return values;
  };
  const env: CallEnv = { host, settings: settingsOf };
  const maxConcurrent = opts.maxConcurrent ?? 64;
  const onError = opts.onError ?? ((err, event) => console.error(`plugin ${registration.name}: ${event} handler failed:`, err));
  let running = 0;

  const announce = () => nc.publish(subjects.heartbeat, encoder.encode(JSON.stringify(registration)));
  const subscriptions: Subscription[] = [
    nc.subscribe(subjects.discover, { callback: (err) => void (err || announce()) }),
    nc.subscribe(subjects.settingsChanged(registration.name), {
      callback: (err, msg) => {
        if (err) return;
        settingsCache.clear();
        const change = parseRequest<{ pipelineId?: string | null }>(msg);
        try {
          opts.onSettingsChanged?.(change?.pipelineId ?? null);
        } catch (e) {
          onError(e, 'settings');
        }
      },
    }),
    nc.subscribe(subjects.call(registration.name), {
      queue: registration.name,
      callback: (err, msg) => {
        if (err) return;
        if (running >= maxConcurrent) return respondError(msg, 'busy');
        running++;
        const schema = msg.headers?.get(SCHEMA_HEADER);
        const work = schema === TOOL_CALL_SCHEMA ? answerTool(msg, tools, env, onError) : schema === COMMAND_CALL_SCHEMA ? answerCommand(msg, commands, env, onError) : schema === RETRIEVE_CALL_SCHEMA ? answerRetrieve(msg, retrievers, env, onError) : answer(msg, handlers, env, onError);
        void work.finally(() => running--);
      },
    }),
  ];
  await nc.flush();
  announce();
  const beat = setInterval(announce, heartbeatMs);

  let stopped: Promise<void> | undefined;
  return {
    registration,
    host,
    settings: settingsOf,
    // Once: a second call waits for the first.
    stop() {
      stopped ??= (async () => {
        clearInterval(beat);
        for (const s of subscriptions) s.unsubscribe();
        if (ownConnection) await nc.drain();
      })();
      return stopped;
    },
  };
}

/** A request's JSON body, or undefined when it is not JSON. */
function parseRequest<T>(msg: Msg): T | undefined {
  try {
    return JSON.parse(decoder.decode(msg.data)) as T;
  } catch {
    return undefined;
  }
}

/** The W3C trace context a call carries, to continue Conveyor's trace in the plugin. */
function traceContextOf(msg: Msg): { traceparent?: string; tracestate?: string } {
  return { traceparent: msg.headers?.get('traceparent') || undefined, tracestate: msg.headers?.get('tracestate') || undefined };
}

/** Answers with a JSON body, or with an error when it is over Conveyor's payload bound. */
function respondJson(msg: Msg, body: EventReply | ToolResult | CommandResult | RetrieveResult): void {
  const data = encoder.encode(JSON.stringify(body));
  if (data.byteLength > LIMITS.payloadBytes) return respondError(msg, `reply of ${data.byteLength} bytes is over the ${LIMITS.payloadBytes}-byte bound`);
  msg.respond(data);
}

function respondError(msg: Msg, message: string): void {
  const h = natsHeaders();
  h.set(PLUGIN_ERROR_HEADER, message.slice(0, 500).replace(/[\r\n]+/g, ' '));
  msg.respond(new Uint8Array(), { headers: h });
}

async function answer(msg: Msg, handlers: Handlers, env: CallEnv, onError: NonNullable<PluginOptions['onError']>): Promise<void> {
  const request = parseRequest<EventRequest>(msg);
  if (!request) return respondError(msg, 'request is not JSON');
  const name = request.event?.event_name;
  const handler = handlers[name] as EventHandler<EventName> | undefined;
  if (!handler) return respondError(msg, `no handler for ${String(name)}`);
  const reply: EventReply = { v: 1, prevent_default: false, prevent_postorder: false };
  const ctx: EventContext = {
    event: request.event,
    queryId: request.queryId,
    botId: request.botId,
    pipelineId: request.pipelineId,
    traceContext: traceContextOf(msg),
    host: env.host,
    settings: () => env.settings(request.pipelineId),
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
  respondJson(msg, reply);
}

async function answerTool(msg: Msg, tools: readonly Tool[], env: CallEnv, onError: NonNullable<PluginOptions['onError']>): Promise<void> {
  const request = parseRequest<ToolCallRequest>(msg);
  if (!request) return respondError(msg, 'request is not JSON');
  const tool = tools.find((t) => t.name === request.tool);
  if (!tool) return respondError(msg, `no tool ${String(request.tool)}`);
  const ctx: ToolContext = {
    queryId: request.queryId,
    botId: request.botId,
    pipelineId: request.pipelineId,
    traceContext: traceContextOf(msg),
    host: env.host,
    settings: () => env.settings(request.pipelineId),
  };
  let result: ToolResult;
  try {
    result = { v: 1, content: await tool.handler(request.arguments ?? {}, ctx) };
  } catch (err) {
    onError(err, `tool:${tool.name}`);
    result = { v: 1, content: err instanceof Error ? err.message : String(err), is_error: true };
  }
  respondJson(msg, result);
}

async function answerCommand(msg: Msg, commands: readonly Command[], env: CallEnv, onError: NonNullable<PluginOptions['onError']>): Promise<void> {
  const request = parseRequest<CommandCallRequest>(msg);
  if (!request) return respondError(msg, 'request is not JSON');
  const command = commands.find((c) => c.name === request.command);
  if (!command) return respondError(msg, `no command ${String(request.command)}`);
  const ctx: CommandContext = {
    queryId: request.queryId,
    botId: request.botId,
    pipelineId: request.pipelineId,
    textMessage: request.text_message,
    launcherType: request.launcher_type,
    launcherId: request.launcher_id,
    senderId: request.sender_id,
    isAdmin: request.is_admin,
    traceContext: traceContextOf(msg),
    host: env.host,
    settings: () => env.settings(request.pipelineId),
  };
  let result: CommandResult;
  try {
    result = { v: 1, text: await command.handler(request.params ?? [], ctx) };
  } catch (err) {
    onError(err, `command:${command.name}`);
    result = { v: 1, text: err instanceof Error ? err.message : String(err) };
  }
  respondJson(msg, result);
}

async function answerRetrieve(msg: Msg, retrievers: readonly Retriever[], env: CallEnv, onError: NonNullable<PluginOptions['onError']>): Promise<void> {
  const request = parseRequest<RetrieveCallRequest>(msg);
  if (!request) return respondError(msg, 'request is not JSON');
  const retriever = retrievers.find((r) => r.name === request.retriever);
  if (!retriever) return respondError(msg, `no retriever ${String(request.retriever)}`);
  const ctx: RetrieveContext = {
    queryId: request.queryId,
    botId: request.botId,
    pipelineId: request.pipelineId,
    knowledgeBaseId: request.knowledgeBaseId,
    traceContext: traceContextOf(msg),
    host: env.host,
    settings: () => env.settings(request.pipelineId),
  };
  let result: RetrieveResult;
  try {
    result = { v: 1, chunks: (await retriever.handler(request.query, request.topK, ctx)).slice(0, Math.min(request.topK, LIMITS.retrievedChunks)) };
  } catch (err) {
    onError(err, `retriever:${retriever.name}`);
    return respondError(msg, err instanceof Error ? err.message : String(err));
  }
  respondJson(msg, result);
}

/** `natsUrl` as the client's server list: one URL, or several comma-separated (a cluster's nodes). */
export function natsServers(natsUrl: string): string[] {
  const servers = natsUrl.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (servers.length === 0) throw new Error(`natsUrl names no server: ${JSON.stringify(natsUrl)}`);
  return servers;
}
