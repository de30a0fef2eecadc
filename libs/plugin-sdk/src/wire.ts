// The wire format of Conveyor's plugin runtime, version 1, as plain types: the SDK carries no schema
// library. Conveyor validates every request it sends and every reply it gets against its own schemas
// (@conveyor/contracts, `PluginEventRequest/1`, `PluginEventReply/1`, `PluginRegistration/1`); a test
// in the Conveyor repository checks that these types and subjects agree with them.

export const CONTRACT_VERSION = 'v1';

export type EventName =
  | 'PersonMessageReceived'
  | 'GroupMessageReceived'
  | 'PersonNormalMessageReceived'
  | 'GroupNormalMessageReceived'
  | 'PromptPreProcessing'
  | 'NormalMessageResponded'
  | 'PersonCommandSent'
  | 'GroupCommandSent';

export const EVENT_NAMES: readonly EventName[] = [
  'PersonMessageReceived',
  'GroupMessageReceived',
  'PersonNormalMessageReceived',
  'GroupNormalMessageReceived',
  'PromptPreProcessing',
  'NormalMessageResponded',
  'PersonCommandSent',
  'GroupCommandSent',
];

/** A message component in LangBot's platform shape (`Plain`, `Image`, `At`, ...). */
export type MessageComponent = { type: string; [field: string]: unknown };
export type MessageChain = MessageComponent[];

/** An element of an LLM message's content (OpenAI chat-completions shape). */
export type ContentElement = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface LlmMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | ContentElement[] | null;
  tool_calls?: { id: string; type?: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
}

interface Launcher {
  launcher_type: 'person' | 'group';
  launcher_id: string;
  sender_id: string;
}

export interface MessageReceivedEvent extends Launcher {
  event_name: 'PersonMessageReceived' | 'GroupMessageReceived';
  message_chain: MessageChain;
}

export interface NormalMessageReceivedEvent extends Launcher {
  event_name: 'PersonNormalMessageReceived' | 'GroupNormalMessageReceived';
  text_message: string;
  message_chain: MessageChain;
}

export interface PromptPreProcessingEvent {
  event_name: 'PromptPreProcessing';
  session_name: string;
  default_prompt: LlmMessage[];
  prompt: LlmMessage[];
}

export interface NormalMessageRespondedEvent extends Launcher {
  event_name: 'NormalMessageResponded';
  prefix: string;
  response_text: string;
  finish_reason: string;
  funcs_called: string[];
}

/** A `!`-command about to run; `preventDefault()` blocks it (with `reply(chain)`, that is the answer). */
export interface CommandSentEvent extends Launcher {
  event_name: 'PersonCommandSent' | 'GroupCommandSent';
  command: string;
  params: string[];
  text_message: string;
  is_admin: boolean;
}

export type PluginEvent = MessageReceivedEvent | NormalMessageReceivedEvent | PromptPreProcessingEvent | NormalMessageRespondedEvent | CommandSentEvent;
/** The event a handler of `N` gets. */
export type EventOf<N extends EventName> = N extends MessageReceivedEvent['event_name']
  ? MessageReceivedEvent
  : N extends NormalMessageReceivedEvent['event_name']
    ? NormalMessageReceivedEvent
    : N extends 'PromptPreProcessing'
      ? PromptPreProcessingEvent
      : N extends CommandSentEvent['event_name']
        ? CommandSentEvent
        : NormalMessageRespondedEvent;

export interface EventRequest {
  v: 1;
  queryId: string;
  botId: string;
  pipelineId: string;
  event: PluginEvent;
}

export interface EventReply {
  v: 1;
  prevent_default: boolean;
  prevent_postorder: boolean;
  reply_message_chain?: MessageChain;
  user_message_alter?: string | ContentElement | ContentElement[];
  default_prompt?: LlmMessage[];
  prompt?: LlmMessage[];
}

/** A tool the plugin offers the local agent: its name (1–64 of A–Z a–z 0–9 _ -), description and JSON Schema of arguments. */
export interface ToolDeclaration {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A run's call of one of the plugin's tools (header `Conveyor-Schema: PluginToolCall/1`). */
export interface ToolCallRequest {
  v: 1;
  queryId: string;
  botId: string;
  pipelineId: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** The tool's answer for the model. */
export interface ToolResult {
  v: 1;
  content: string | ContentElement[];
  is_error?: boolean;
}

/** A `!`-command the plugin offers: its name (1–32 of A–Z a–z 0–9 _ -), its line in `!help`, and whether only admins' chats may run it. */
export interface CommandDeclaration {
  name: string;
  help: string;
  adminOnly: boolean;
}

/** A chat's command (header `Conveyor-Schema: PluginCommandCall/1`). */
export interface CommandCallRequest {
  v: 1;
  queryId: string;
  botId: string;
  pipelineId: string;
  command: string;
  params: string[];
  text_message: string;
  launcher_type: 'person' | 'group';
  launcher_id: string;
  sender_id: string;
  is_admin: boolean;
}

/** The command's reply text, sent to the chat as `[bot] <text>`. */
export interface CommandResult {
  v: 1;
  text: string;
}

/** A knowledge retriever the plugin offers: a knowledge base may be backed by it instead of documents. */
export interface RetrieverDeclaration {
  name: string;
  description: string;
}

/** A retrieval from a knowledge base backed by one of the plugin's retrievers (header `Conveyor-Schema: PluginRetrieveCall/1`). */
export interface RetrieveCallRequest {
  v: 1;
  queryId: string;
  botId: string;
  pipelineId: string;
  retriever: string;
  knowledgeBaseId: string;
  query: string;
  topK: number;
}

/** The chunks found, best first. */
export interface RetrieveResult {
  v: 1;
  chunks: Array<{ text: string; score?: number; source?: string }>;
}

export interface Registration {
  v: 1;
  name: string;
  version?: string;
  /** JSON Schema (an object schema) of the settings an admin fills in; `writeOnly` or `format: "password"` marks a secret. */
  settings?: Record<string, unknown>;
  instanceId: string;
  events: EventName[];
  tools: ToolDeclaration[];
  commands: CommandDeclaration[];
  retrievers: RetrieverDeclaration[];
  priority: number;
  timeoutMs: number;
  ttlMs: number;
}

/** Bounds Conveyor enforces: a registration outside them is ignored, a reply over the payload bound is dropped. */
export const LIMITS = {
  maxTimeoutMs: 30_000,
  minTtlMs: 1_000,
  maxTtlMs: 60_000,
  payloadBytes: 1_048_576,
  toolsPerPlugin: 32,
  commandsPerPlugin: 32,
  retrieversPerPlugin: 8,
  retrievedChunks: 64,
  /** The plugin's storage: characters of a key, bytes of a value, keys and bytes in all. */
  storageKeyChars: 256,
  storageValueBytes: 262_144,
  storageKeys: 1_000,
  storageBytes: 4_194_304,
  /** Longest Conveyor works on one host call. */
  hostCallMs: 120_000,
} as const;

/** Header on a reply whose handler failed: Conveyor logs the text and goes on without the plugin. */
export const PLUGIN_ERROR_HEADER = 'Conveyor-Plugin-Error';

/** Header naming a request's schema: `PluginEventRequest/1`, `PluginToolCall/1` or `PluginCommandCall/1`. */
export const SCHEMA_HEADER = 'Conveyor-Schema';
export const TOOL_CALL_SCHEMA = 'PluginToolCall/1';
export const COMMAND_CALL_SCHEMA = 'PluginCommandCall/1';
export const RETRIEVE_CALL_SCHEMA = 'PluginRetrieveCall/1';

/** Conveyor's subject token escaping: anything but letters, digits, `_` and `-` becomes `~xx`. */
export function subjectToken(raw: string): string {
  const token = raw.replace(/[^A-Za-z0-9_-]/g, (c) => '~' + c.charCodeAt(0).toString(16).padStart(2, '0'));
  if (token.length === 0) throw new Error('subject token must not be empty');
  return token;
}

/** The plugin runtime's subjects under a Conveyor deployment's subject prefix (`CONVEYOR_SUBJECT_PREFIX`). */
export function pluginSubjects(prefix: string) {
  if (!/^[a-z][a-z0-9_-]{0,63}$/.test(prefix)) throw new Error(`subject prefix ${JSON.stringify(prefix)} must match ^[a-z][a-z0-9_-]{0,63}$`);
  const base = `${prefix}.${CONTRACT_VERSION}.plugin`;
  return {
    heartbeat: `${base}.heartbeat`,
    discover: `${base}.discover`,
    call: (pluginName: string) => `${base}.call.${subjectToken(pluginName)}`,
    /** Where the plugin calls Conveyor (the host API). */
    host: (pluginName: string) => `${base}.host.${subjectToken(pluginName)}`,
    /** The inbox prefix of the plugin's connection: the host API's answers arrive under it. */
    inboxPrefix: (pluginName: string) => `_INBOX_${prefix.replace(/-/g, '_')}.plugin.${subjectToken(pluginName)}`,
    /** Where Conveyor says an admin changed the plugin's settings (`{v:1, pipelineId}`). */
    settingsChanged: (pluginName: string) => `${base}.settings.${subjectToken(pluginName)}`,
  };
}

/** Header value of the host API's final answer and of a streamed answer's text. */
export const HOST_REPLY_SCHEMA = 'PluginHostReply/1';
export const HOST_STREAM_CHUNK_SCHEMA = 'PluginHostStreamChunk/1';

/**
 * A call into Conveyor (the host API, `PluginHostRequest/1`), on the plugin's host subject with a
 * reply subject under its inbox prefix. `plugin` is the plugin's own name.
 */
export type HostRequest =
  | { v: 1; plugin: string; op: 'storage.get'; key: string }
  | { v: 1; plugin: string; op: 'storage.set'; key: string; value: string }
  | { v: 1; plugin: string; op: 'storage.delete'; key: string }
  | { v: 1; plugin: string; op: 'storage.list'; prefix?: string }
  | { v: 1; plugin: string; op: 'llm.invoke'; pipelineId: string; messages: LlmMessage[]; stream?: boolean }
  | { v: 1; plugin: string; op: 'embeddings'; modelId: string; texts: string[] }
  | { v: 1; plugin: string; op: 'rerank'; modelId: string; query: string; documents: string[] }
  | { v: 1; plugin: string; op: 'knowledge.retrieve'; knowledgeBaseId: string; query: string; topK?: number }
  | { v: 1; plugin: string; op: 'settings.get'; pipelineId?: string }
  | { v: 1; plugin: string; op: 'message.send'; botId: string; target: { type: 'person' | 'group'; id: string }; messageChain: MessageChain };

/** Why a host call was refused or failed. */
export type HostErrorCode = 'invalid' | 'forbidden' | 'not_found' | 'too_large' | 'unavailable' | 'internal';

/** The final answer of a host call (`PluginHostReply/1`); a streamed `llm.invoke` sends `{v, delta}` messages first. */
export type HostReply = { v: 1; ok: true; result: Record<string, unknown> } | { v: 1; ok: false; error: { code: HostErrorCode; message: string } };
