import { z } from 'zod';
import { ContentPart, LlmMessage } from './llm-message.js';
import { MessageChainSchema, type MessageChain } from './message-chain.js';

/**
 * Plugins are separate processes, in any language, reached over core NATS request/reply. A plugin
 * announces itself with a heartbeat (`PluginRegistration` on `topology(prefix).subjects.plugins.heartbeat`)
 * and answers events on `call(name)` in a queue group named after it, so its instances share the
 * calls. The wire fields of an event are LangBot's event model fields (snake_case), so a LangBot
 * plugin's logic ports field for field.
 */
const V1 = z.literal(1);

/** Bounds of the plugin runtime. */
export const PLUGIN_LIMITS = {
  /** Plugins one host remembers; registrations past this are ignored (and logged). */
  registered: 256,
  /** Plugins called for one event; the rest, lowest priority first, are skipped (and counted). */
  callsPerEvent: 16,
  /** Longest a plugin may ask to be waited for per call. */
  maxTimeoutMs: 30_000,
  /** Bytes of one event request or reply (NATS' default max_payload). */
  payloadBytes: 1_048_576,
  /** Shortest and longest expiry a registration may ask for. */
  minTtlMs: 1_000,
  maxTtlMs: 60_000,
  /** Tools one plugin may offer, characters of a tool's description, bytes of its argument schema. */
  toolsPerPlugin: 32,
  toolDescriptionChars: 2_048,
  toolSchemaBytes: 16_384,
  /** Commands one plugin may offer, and characters of a command's help. */
  commandsPerPlugin: 32,
  commandHelpChars: 256,
  /** Knowledge retrievers one plugin may offer, and chunks one retrieval may answer. */
  retrieversPerPlugin: 8,
  retrievedChunks: 64,
  /** A plugin's own key/value storage: characters of a key, bytes of a value, keys and bytes in all. */
  storageKeyChars: 256,
  storageValueBytes: 262_144,
  storageKeys: 1_000,
  storageBytes: 4_194_304,
  /** Texts one embedding call may carry, documents one rerank call, chunks one retrieval returns. */
  hostTexts: 64,
  hostTopK: 64,
  /** Longest a host call (a model's answer included) may take before the runner gives up on it. */
  hostCallMs: 120_000,
  /** Bytes of a plugin's settings schema, and of the values stored for one scope. */
  settingsSchemaBytes: 16_384,
  settingsValuesBytes: 65_536,
} as const;

/** LangBot's pipeline events that Conveyor emits. */
export const PluginEventName = z.enum([
  'PersonMessageReceived',
  'GroupMessageReceived',
  'PersonNormalMessageReceived',
  'GroupNormalMessageReceived',
  'PromptPreProcessing',
  'NormalMessageResponded',
  'PersonCommandSent',
  'GroupCommandSent',
]);
export type PluginEventName = z.infer<typeof PluginEventName>;

/** LangBot's plugin id, `author/name`. */
export const PluginName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be author/name');

/** A tool's name as the model sees it (OpenAI's function names). */
export const PluginToolName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a tool name is 1 to 64 letters, digits, _ or -');

/**
 * A tool a plugin offers the local agent (LangBot's plugin `Tool` component): the model sees its name,
 * description and the JSON Schema of its arguments, beside the MCP and sandbox tools.
 */
export const PluginTool = z.object({
  name: PluginToolName,
  description: z.string().max(PLUGIN_LIMITS.toolDescriptionChars),
  /** JSON Schema of the arguments (an object schema). */
  parameters: z.record(z.string(), z.unknown()).refine((s) => JSON.stringify(s).length <= PLUGIN_LIMITS.toolSchemaBytes, `the argument schema is over ${PLUGIN_LIMITS.toolSchemaBytes} bytes`),
});
export type PluginTool = z.infer<typeof PluginTool>;

/** A command's name, the word after the prefix (`!name args`). */
export const PluginCommandName = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'a command name is 1 to 32 letters, digits, _ or -');

/** A `!`-command a plugin offers (LangBot's plugin Command component), listed by `!help`. */
export const PluginCommand = z.object({
  name: PluginCommandName,
  help: z.string().max(PLUGIN_LIMITS.commandHelpChars).default(''),
  /** Only a chat the instance settings name as an admin (`command.admins`) may run it (LangBot's privilege 2). */
  adminOnly: z.boolean().default(false),
});
export type PluginCommand = z.infer<typeof PluginCommand>;

/**
 * A knowledge retriever a plugin offers (LangBot's KnowledgeRetriever component): a knowledge base may
 * be backed by it instead of documents, and retrieval then asks the plugin for the chunks.
 */
export const PluginRetriever = z.object({
  name: PluginToolName,
  description: z.string().max(PLUGIN_LIMITS.toolDescriptionChars).default(''),
});
export type PluginRetriever = z.infer<typeof PluginRetriever>;

export const PluginRegistration = z.object({
  v: V1,
  name: PluginName,
  /** The plugin's own version (its manifest's), shown to operators; absent from plugins that do not say. */
  version: z.string().trim().min(1).max(64).optional(),
  /** One running process of the plugin; instances of one plugin share its calls. */
  instanceId: z.string().min(1).max(128),
  /** The events it answers; none for a plugin that only offers tools. */
  events: z.array(PluginEventName).max(PluginEventName.options.length).default([]),
  tools: z.array(PluginTool).max(PLUGIN_LIMITS.toolsPerPlugin).default([])
    .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'two tools of one plugin share a name'),
  commands: z.array(PluginCommand).max(PLUGIN_LIMITS.commandsPerPlugin).default([])
    .refine((commands) => new Set(commands.map((c) => c.name)).size === commands.length, 'two commands of one plugin share a name'),
  retrievers: z.array(PluginRetriever).max(PLUGIN_LIMITS.retrieversPerPlugin).default([])
    .refine((retrievers) => new Set(retrievers.map((r) => r.name)).size === retrievers.length, 'two retrievers of one plugin share a name'),
  /**
   * JSON Schema (an object schema) of the settings an admin fills in, per installation and per
   * pipeline; a property with `writeOnly: true` or `format: "password"` is a secret (masked in the
   * admin API). Absent: the plugin has no settings.
   */
  settings: z.record(z.string(), z.unknown()).refine((s) => JSON.stringify(s).length <= PLUGIN_LIMITS.settingsSchemaBytes, `the settings schema is over ${PLUGIN_LIMITS.settingsSchemaBytes} bytes`).optional(),
  /** Higher is called first; equal priorities in name order. */
  priority: z.number().int().min(-1_000_000).max(1_000_000).default(0),
  /** How long one call may take before the host moves on without the plugin's answer. */
  timeoutMs: z.number().int().min(1).max(PLUGIN_LIMITS.maxTimeoutMs),
  /** The registration expires this long after its last heartbeat. */
  ttlMs: z.number().int().min(PLUGIN_LIMITS.minTtlMs).max(PLUGIN_LIMITS.maxTtlMs),
}).refine((r) => r.events.length > 0 || r.tools.length > 0 || r.commands.length > 0 || r.retrievers.length > 0, 'a plugin answers at least one event or offers at least one tool, command or retriever').meta({ id: 'PluginRegistration/1' });
export type PluginRegistration = z.infer<typeof PluginRegistration>;

/** A host starting up asks every plugin to send its heartbeat at once instead of at its next beat. */
export const PluginDiscover = z.object({ v: V1 }).meta({ id: 'PluginDiscover/1' });
export type PluginDiscover = z.infer<typeof PluginDiscover>;

const Launcher = {
  launcher_type: z.enum(['person', 'group']),
  launcher_id: z.string(),
  sender_id: z.string(),
};

export const PluginEventPayload = z.discriminatedUnion('event_name', [
  z.object({ event_name: z.enum(['PersonMessageReceived', 'GroupMessageReceived']), ...Launcher, message_chain: MessageChainSchema }),
  z.object({
    event_name: z.enum(['PersonNormalMessageReceived', 'GroupNormalMessageReceived']),
    ...Launcher,
    text_message: z.string(),
    message_chain: MessageChainSchema,
  }),
  z.object({
    event_name: z.literal('PromptPreProcessing'),
    session_name: z.string(),
    /** The conversation's preset (system prompt) for this turn. */
    default_prompt: z.array(LlmMessage),
    /** The conversation's history for this turn. */
    prompt: z.array(LlmMessage),
  }),
  z.object({
    event_name: z.enum(['PersonCommandSent', 'GroupCommandSent']),
    ...Launcher,
    command: z.string(),
    params: z.array(z.string()).max(256),
    text_message: z.string(),
    is_admin: z.boolean(),
  }),
  z.object({
    event_name: z.literal('NormalMessageResponded'),
    ...Launcher,
    prefix: z.string(),
    response_text: z.string(),
    finish_reason: z.string(),
    funcs_called: z.array(z.string()),
  }),
]);
export type PluginEventPayload = z.infer<typeof PluginEventPayload>;

/** What every call to a plugin carries first: the wire version and the message, bot and pipeline it is for. */
const CallOrigin = {
  v: V1,
  queryId: z.string().max(200),
  botId: z.string().max(200),
  pipelineId: z.string().max(200),
};

export const PluginEventRequest = z.object({
  ...CallOrigin,
  event: PluginEventPayload,
}).meta({ id: 'PluginEventRequest/1' });
export type PluginEventRequest = z.infer<typeof PluginEventRequest>;

/**
 * A plugin's answer: only what it changes. Fields an event does not have are ignored:
 * `reply_message_chain` counts with prevent_default on the NormalMessageReceived events and
 * NormalMessageResponded, `user_message_alter` on NormalMessageReceived, the prompts on
 * PromptPreProcessing.
 */
export const PluginEventReply = z.object({
  v: V1,
  prevent_default: z.boolean().default(false),
  /** LangBot's prevent_postorder: plugins after this one are not called for the event. */
  prevent_postorder: z.boolean().default(false),
  reply_message_chain: MessageChainSchema.nullable().optional(),
  /** Replaces the user's message before the runner: a string, one content element or a list of them. */
  user_message_alter: z.union([z.string(), ContentPart, z.array(ContentPart).max(1_000)]).nullable().optional(),
  default_prompt: z.array(LlmMessage).max(10_000).optional(),
  prompt: z.array(LlmMessage).max(10_000).optional(),
}).meta({ id: 'PluginEventReply/1' });
export type PluginEventReply = z.infer<typeof PluginEventReply>;

/**
 * A tool call from a run (core NATS request on the plugin's call subject, header `Conveyor-Schema:
 * PluginToolCall/1`): the model's arguments for one of the plugin's tools.
 */
export const PluginToolCall = z.object({
  ...CallOrigin,
  tool: PluginToolName,
  arguments: z.record(z.string(), z.unknown()),
}).meta({ id: 'PluginToolCall/1' });
export type PluginToolCall = z.infer<typeof PluginToolCall>;

/** The tool's answer for the model: text or content parts; `is_error` marks a failure the model should read as one. */
export const PluginToolResult = z.object({
  v: V1,
  content: z.union([z.string(), z.array(ContentPart).max(64)]),
  is_error: z.boolean().default(false),
}).meta({ id: 'PluginToolResult/1' });
export type PluginToolResult = z.infer<typeof PluginToolResult>;

/**
 * A `!`-command from a chat (header `Conveyor-Schema: PluginCommandCall/1`), LangBot's
 * `ExecuteContext`: the command, its parameters (split on single spaces), the whole text, the chat and
 * whether it is an admin's.
 */
export const PluginCommandCall = z.object({
  ...CallOrigin,
  command: PluginCommandName,
  params: z.array(z.string()).max(256),
  text_message: z.string(),
  launcher_type: z.enum(['person', 'group']),
  launcher_id: z.string(),
  sender_id: z.string(),
  is_admin: z.boolean(),
}).meta({ id: 'PluginCommandCall/1' });
export type PluginCommandCall = z.infer<typeof PluginCommandCall>;

/** The command's reply text for the chat (sent as `[bot] <text>`, as LangBot's command replies). */
export const PluginCommandResult = z.object({ v: V1, text: z.string().max(PLUGIN_LIMITS.payloadBytes / 2) }).meta({ id: 'PluginCommandResult/1' });
export type PluginCommandResult = z.infer<typeof PluginCommandResult>;

/**
 * A retrieval from a knowledge base backed by one of the plugin's retrievers (header `Conveyor-Schema:
 * PluginRetrieveCall/1`): the user's question and how many chunks the knowledge base wants.
 */
export const PluginRetrieveCall = z.object({
  ...CallOrigin,
  retriever: PluginToolName,
  knowledgeBaseId: z.string().max(200),
  query: z.string().max(100_000),
  topK: z.number().int().min(1).max(PLUGIN_LIMITS.retrievedChunks),
}).meta({ id: 'PluginRetrieveCall/1' });
export type PluginRetrieveCall = z.infer<typeof PluginRetrieveCall>;

/** The chunks found, best first (at most `topK` are used); `score` and `source` are shown where chunks are. */
export const PluginRetrieveResult = z.object({
  v: V1,
  chunks: z.array(z.object({ text: z.string().max(100_000), score: z.number().optional(), source: z.string().max(1_000).optional() })).max(PLUGIN_LIMITS.retrievedChunks),
}).meta({ id: 'PluginRetrieveResult/1' });
export type PluginRetrieveResult = z.infer<typeof PluginRetrieveResult>;

/** The plugins a pipeline binds (LangBot's `_pipeline_bound_plugins`): every one, or these names. */
export type PluginBinding = 'all' | readonly string[];

/** What the plugins called for one event decided, folded in call order. */
export interface PluginEventOutcome {
  preventDefault: boolean;
  replyMessageChain?: MessageChain;
  userMessageAlter?: string | ContentPart | ContentPart[];
  defaultPrompt?: LlmMessage[];
  prompt?: LlmMessage[];
  /** Plugins that answered, in call order. */
  answered: string[];
}

/** LangBot's default when nothing intervenes: the pipeline goes on unchanged. */
export function noPluginOutcome(): PluginEventOutcome {
  return { preventDefault: false, answered: [] };
}

/**
 * Folds one plugin's answer into the outcome and into the event the next plugin sees. A later plugin's
 * value replaces an earlier one's; prevent_default, once set, stays set (as on LangBot's shared event
 * context).
 */
export function foldPluginReply(outcome: PluginEventOutcome, event: PluginEventPayload, reply: PluginEventReply, plugin: string): PluginEventPayload {
  outcome.answered.push(plugin);
  if (reply.prevent_default) outcome.preventDefault = true;
  if (reply.reply_message_chain) outcome.replyMessageChain = reply.reply_message_chain;
  if (reply.user_message_alter !== undefined && reply.user_message_alter !== null) outcome.userMessageAlter = reply.user_message_alter;
  if (event.event_name !== 'PromptPreProcessing') return event;
  if (reply.default_prompt) outcome.defaultPrompt = reply.default_prompt;
  if (reply.prompt) outcome.prompt = reply.prompt;
  return { ...event, default_prompt: outcome.defaultPrompt ?? event.default_prompt, prompt: outcome.prompt ?? event.prompt };
}

// ---------------------------------------------------------------- the host API: a plugin calls Conveyor

const StorageKey = z.string().min(1).max(PLUGIN_LIMITS.storageKeyChars);
const HostId = z.string().min(1).max(200);

/**
 * A plugin's call into Conveyor (LangBot's plugin host API), on the plugin's own host subject; `plugin`
 * must be the name that subject was built from. `op` says what is asked:
 * - `storage.get` / `storage.set` / `storage.delete` / `storage.list`: the plugin's own key/value
 *   storage (values are text; a plugin encodes what it keeps, JSON say), bounded per plugin;
 * - `llm.invoke`: the model of a pipeline that binds the plugin (its primary, then its fallbacks), with
 *   `stream: true` answered by several replies (`PluginHostStreamChunk/1`, then the final reply);
 * - `embeddings` / `rerank`: a model with that ability, by id;
 * - `knowledge.retrieve`: a knowledge base a pipeline binding the plugin retrieves from;
 * - `message.send`: a message to a chat of a bot whose pipeline binds the plugin (LangBot's
 *   `send_message`), sent by a dispatcher straight to the platform;
 * - `settings.get`: the settings an admin gave the plugin, the installation's with a pipeline's
 *   (one that binds the plugin) over them when `pipelineId` is given.
 */
export const PluginHostRequest = z.discriminatedUnion('op', [
  z.object({ v: V1, plugin: PluginName, op: z.literal('storage.get'), key: StorageKey }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('storage.set'), key: StorageKey, value: z.string() }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('storage.delete'), key: StorageKey }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('storage.list'), prefix: z.string().max(PLUGIN_LIMITS.storageKeyChars).default('') }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('llm.invoke'), pipelineId: HostId, messages: z.array(LlmMessage).min(1).max(1_000), stream: z.boolean().default(false) }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('embeddings'), modelId: HostId, texts: z.array(z.string().max(100_000)).min(1).max(PLUGIN_LIMITS.hostTexts) }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('rerank'), modelId: HostId, query: z.string().max(100_000), documents: z.array(z.string().max(100_000)).min(1).max(PLUGIN_LIMITS.hostTexts) }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('settings.get'), pipelineId: HostId.optional() }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('message.send'), botId: HostId, target: z.object({ type: z.enum(['person', 'group']), id: z.string().min(1).max(1000) }), messageChain: MessageChainSchema }),
  z.object({ v: V1, plugin: PluginName, op: z.literal('knowledge.retrieve'), knowledgeBaseId: HostId, query: z.string().min(1).max(100_000), topK: z.number().int().min(1).max(PLUGIN_LIMITS.hostTopK).optional() }),
]).meta({ id: 'PluginHostRequest/1' });
export type PluginHostRequest = z.infer<typeof PluginHostRequest>;
export type PluginHostOp = PluginHostRequest['op'];

/**
 * Why a host call was refused or failed: `invalid` (the request), `forbidden` (not the plugin's to use:
 * a pipeline that does not bind it, another plugin's subject), `not_found`, `too_large` (a storage
 * bound), `unavailable` (the model or backend failed), `internal`.
 */
export const PluginHostErrorCode = z.enum(['invalid', 'forbidden', 'not_found', 'too_large', 'unavailable', 'internal']);
export type PluginHostErrorCode = z.infer<typeof PluginHostErrorCode>;

/** What each op answers, in `result` of a successful reply. */
export interface PluginHostResults {
  'storage.get': { value: string | null };
  'storage.set': { bytes: number };
  'storage.delete': { deleted: boolean };
  'storage.list': { keys: string[] };
  'llm.invoke': { message: LlmMessage; model: string; usage?: { prompt_tokens: number; completion_tokens: number } };
  embeddings: { embeddings: number[][] };
  rerank: { results: Array<{ index: number; score: number }> };
  'knowledge.retrieve': { chunks: Array<{ text: string; score: number; documentId: string }> };
  'settings.get': { values: Record<string, unknown> };
  'message.send': { sent: true };
}

/**
 * An admin changed a plugin's settings (core NATS, the plugin's own `settingsChanged` subject): for
 * the installation (`pipelineId` null) or one pipeline. It carries no values, so no secret travels on
 * a broadcast; the plugin reads them with `settings.get`.
 */
export const PluginSettingsChanged = z.object({ v: V1, pipelineId: z.string().nullable() }).meta({ id: 'PluginSettingsChanged/1' });
export type PluginSettingsChanged = z.infer<typeof PluginSettingsChanged>;

export const PluginHostReply = z.discriminatedUnion('ok', [
  z.object({ v: V1, ok: z.literal(true), result: z.record(z.string(), z.unknown()) }),
  z.object({ v: V1, ok: z.literal(false), error: z.object({ code: PluginHostErrorCode, message: z.string().max(2_000) }) }),
]).meta({ id: 'PluginHostReply/1' });
export type PluginHostReply = z.infer<typeof PluginHostReply>;

/** A streamed `llm.invoke`'s text as it comes, before the final reply (header `Conveyor-Schema: PluginHostStreamChunk/1`). */
export const PluginHostStreamChunk = z.object({ v: V1, delta: z.string() }).meta({ id: 'PluginHostStreamChunk/1' });
export type PluginHostStreamChunk = z.infer<typeof PluginHostStreamChunk>;
