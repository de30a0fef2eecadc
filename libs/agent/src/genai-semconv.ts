import type { Attributes } from '@opentelemetry/api';
import type { LlmMessage } from '@conveyor/contracts';

/**
 * The OpenTelemetry GenAI semantic conventions as Conveyor applies them to its model calls: pure mappings from a model's configuration, a request and a response to span and
 * metric attributes. Plain functions, so every mapping is unit-tested without a model.
 */

/**
 * Well-known `gen_ai.provider.name` values by API host (the conventions' list), then the custom
 * names of providers LangBot's users reach through the OpenAI API that the list does not have.
 * A suffix match, so regional and resource hosts (`x.openai.azure.com`) count too.
 */
const PROVIDER_BY_HOST: readonly [suffix: string, provider: string][] = [
  ['api.openai.com', 'openai'],
  ['openai.azure.com', 'azure.ai.openai'],
  ['cognitiveservices.azure.com', 'azure.ai.openai'],
  ['services.ai.azure.com', 'azure.ai.inference'],
  ['models.ai.azure.com', 'azure.ai.inference'],
  ['inference.ai.azure.com', 'azure.ai.inference'],
  ['api.deepseek.com', 'deepseek'],
  ['api.anthropic.com', 'anthropic'],
  ['generativelanguage.googleapis.com', 'gcp.gemini'],
  ['aiplatform.googleapis.com', 'gcp.vertex_ai'],
  ['api.groq.com', 'groq'],
  ['api.mistral.ai', 'mistral_ai'],
  ['api.perplexity.ai', 'perplexity'],
  ['api.x.ai', 'x_ai'],
  ['api.cohere.ai', 'cohere'],
  ['api.cohere.com', 'cohere'],
  ['ml.cloud.ibm.com', 'ibm.watsonx.ai'],
  // Not in the conventions' list, which allows custom values for providers it does not name.
  ['dashscope.aliyuncs.com', 'alibaba.dashscope'],
  ['dashscope-intl.aliyuncs.com', 'alibaba.dashscope'],
  ['api.moonshot.cn', 'moonshot'],
  ['api.moonshot.ai', 'moonshot'],
  ['open.bigmodel.cn', 'zhipu_ai'],
  ['api.siliconflow.cn', 'siliconflow'],
  ['api.siliconflow.com', 'siliconflow'],
  ['volces.com', 'volcengine'],
  ['openrouter.ai', 'openrouter'],
];

/** Ollama's default port: a local model server behind the OpenAI-compatible `/v1`. */
const OLLAMA_PORT = 11434;

/**
 * Any other OpenAI-compatible endpoint (vLLM, LM Studio, a gateway, a test fake). Not `openai`: the
 * conventions reserve that for OpenAI itself, and a trace backend would price and group these calls
 * as OpenAI's.
 */
export const UNKNOWN_OPENAI_COMPATIBLE_PROVIDER = 'openai_compatible';

function parseUrl(baseUrl: string): URL | undefined {
  try {
    return new URL(baseUrl);
  } catch {
    return undefined;
  }
}

function hostMatches(host: string, suffix: string): boolean {
  return host === suffix || host.endsWith(`.${suffix}`);
}

/**
 * `gen_ai.provider.name` of an OpenAI-compatible model, from its base URL's host (see PROVIDER_BY_HOST).
 * The native providers name themselves (providers/).
 */
export function providerName(baseUrl: string): string {
  const url = parseUrl(baseUrl);
  if (!url) return UNKNOWN_OPENAI_COMPATIBLE_PROVIDER;
  const host = url.hostname.toLowerCase();
  const known = PROVIDER_BY_HOST.find(([suffix]) => hostMatches(host, suffix));
  if (known) return known[1];
  // Vertex AI's regional endpoints: `us-central1-aiplatform.googleapis.com`.
  if (hostMatches(host, 'googleapis.com') && host.split('.')[0].endsWith('-aiplatform')) return 'gcp.vertex_ai';
  // bedrock-runtime.<region>.amazonaws.com and its OpenAI-compatible path; other AWS hosts are not Bedrock.
  if (hostMatches(host, 'amazonaws.com') && host.split('.').some((label) => label.startsWith('bedrock'))) return 'aws.bedrock';
  if (Number(url.port) === OLLAMA_PORT || host.split('.').includes('ollama')) return 'ollama';
  return UNKNOWN_OPENAI_COMPATIBLE_PROVIDER;
}

/** `server.address` and `server.port` of a base URL (the port from the scheme when the URL has none). */
export function serverAttributes(baseUrl: string): { 'server.address'?: string; 'server.port'?: number } {
  const url = parseUrl(baseUrl);
  if (!url || !url.hostname) return {};
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : undefined;
  // URL keeps an IPv6 literal's brackets; the attribute is the address itself.
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { 'server.address': address, ...(port !== undefined ? { 'server.port': port } : {}) };
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * The request parameters a model's extra arguments send (they are spread into every request), as
 * `gen_ai.request.*` attributes. Values of the wrong type are left out rather than guessed at.
 */
export function requestParameterAttributes(extraArgs: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  const numeric: [arg: string, attribute: string][] = [
    ['temperature', 'gen_ai.request.temperature'],
    ['top_p', 'gen_ai.request.top_p'],
    ['top_k', 'gen_ai.request.top_k'],
    ['frequency_penalty', 'gen_ai.request.frequency_penalty'],
    ['presence_penalty', 'gen_ai.request.presence_penalty'],
    ['seed', 'gen_ai.request.seed'],
    // The newer name OpenAI uses for reasoning models, then the classic one (which wins when both are set).
    ['max_completion_tokens', 'gen_ai.request.max_tokens'],
    ['max_tokens', 'gen_ai.request.max_tokens'],
  ];
  for (const [arg, attribute] of numeric) if (isNumber(extraArgs[arg])) out[attribute] = extraArgs[arg];
  // The conventions record the choice count only when it is not 1.
  if (isNumber(extraArgs.n) && extraArgs.n !== 1) out['gen_ai.request.choice.count'] = extraArgs.n;
  const stop = extraArgs.stop;
  if (typeof stop === 'string') out['gen_ai.request.stop_sequences'] = [stop];
  else if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) out['gen_ai.request.stop_sequences'] = stop;
  return out;
}

/**
 * `error.type` of a failed model call: the HTTP status the provider answered with (the conventions'
 * "error code returned by the provider"), `timeout` for the client's own timeout, else the error's
 * class name; `_OTHER` when there is none. Read from the error's fields, never from its message.
 */
export function errorType(err: unknown): string {
  if (typeof err !== 'object' || err === null) return '_OTHER';
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number' && Number.isInteger(status)) return String(status);
  const name = err.constructor?.name && err.constructor.name !== 'Object' ? err.constructor.name : (err as { name?: unknown }).name;
  if (name === 'APIConnectionTimeoutError' || name === 'ProviderTimeoutError') return 'timeout';
  return typeof name === 'string' && name ? name : '_OTHER';
}

// ------------------------------------------------------------------------------------- content

/**
 * The bound on one content attribute's JSON. Long histories are cut from the oldest message so the
 * value stays valid JSON; a trace backend refuses or truncates values far larger than this anyway.
 */
export const MAX_CONTENT_ATTRIBUTE_CHARS = 128 * 1024;

type Part =
  | { type: 'text'; content: string }
  | { type: 'uri'; modality: 'image'; uri: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: string };

interface ChatMessage {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

/** An inline image is megabytes of base64: the span says what it was, not what it held. */
function imageUri(url: string): string {
  if (!url.startsWith('data:')) return url;
  const comma = url.indexOf(',');
  return `${url.slice(0, comma < 0 ? 5 : comma + 1)}…(${url.length} chars omitted)`;
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function contentParts(content: LlmMessage['content']): Part[] {
  if (content == null || content === '') return [];
  if (typeof content === 'string') return [{ type: 'text', content }];
  return content.map((p): Part => (p.type === 'text' ? { type: 'text', content: p.text } : { type: 'uri', modality: 'image', uri: imageUri(p.image_url.url) }));
}

function textOf(content: LlmMessage['content']): string {
  if (content == null) return '';
  return typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

function chatMessage(m: LlmMessage): ChatMessage {
  if (m.role === 'tool') return { role: 'tool', parts: [{ type: 'tool_call_response', id: m.tool_call_id ?? '', response: textOf(m.content) }] };
  const calls = (m.tool_calls ?? []).map((c): Part => ({ type: 'tool_call', id: c.id, name: c.function.name, arguments: parseArguments(c.function.arguments) }));
  return { role: m.role, parts: [...contentParts(m.content), ...calls] };
}

/** The newest items whose JSON fits the bound (the newest alone when even it does not, cut to text). */
function boundedJson(items: unknown[]): string {
  const all = JSON.stringify(items);
  if (all.length <= MAX_CONTENT_ATTRIBUTE_CHARS) return all;
  const kept: string[] = [];
  let size = 2;
  for (let i = items.length - 1; i >= 0; i--) {
    const one = JSON.stringify(items[i]);
    if (size + one.length + 1 > MAX_CONTENT_ATTRIBUTE_CHARS) break;
    kept.unshift(one);
    size += one.length + 1;
  }
  if (kept.length === 0) return JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: `${all.slice(0, MAX_CONTENT_ATTRIBUTE_CHARS / 2)}…(truncated)` }] }]);
  return `[${kept.join(',')}]`;
}

/**
 * `gen_ai.system_instructions` and `gen_ai.input.messages` of a request: the system messages as
 * instructions (the conventions keep them apart), the rest as chat messages with typed parts.
 */
export function inputContentAttributes(messages: LlmMessage[]): Attributes {
  const system = messages.filter((m) => m.role === 'system');
  const rest = messages.filter((m) => m.role !== 'system');
  return {
    ...(system.length ? { 'gen_ai.system_instructions': boundedJson(system.flatMap((m) => contentParts(m.content))) } : {}),
    'gen_ai.input.messages': boundedJson(rest.map(chatMessage)),
  };
}

/** `gen_ai.output.messages` of a response: the assistant's message with its finish reason. */
export function outputContentAttributes(message: LlmMessage, finishReason: string | null): Attributes {
  return { 'gen_ai.output.messages': boundedJson([{ ...chatMessage(message), finish_reason: finishReason ?? '' }]) };
}

/** Cut to the bound, marked where it was cut. */
function boundedText(text: string): string {
  return text.length <= MAX_CONTENT_ATTRIBUTE_CHARS ? text : `${text.slice(0, MAX_CONTENT_ATTRIBUTE_CHARS)}…(truncated)`;
}

/**
 * `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` of a tool call (opt-in content, like
 * the messages): the arguments as the model sent them, the result as the model reads it, images by
 * their media type only.
 */
export function toolContentAttributes(argumentsText: string, result: LlmMessage['content']): Attributes {
  const shown = typeof result === 'string' || result == null ? (result ?? '') : JSON.stringify(contentParts(result));
  return { 'gen_ai.tool.call.arguments': boundedText(argumentsText), 'gen_ai.tool.call.result': boundedText(shown) };
}

// ------------------------------------------------------------------------------------ identity

/**
 * Who and what a model call serves, for span attributes (`session.id`, `user.id`, the conversation)
 * and metric attributes (bot and pipeline). Identifiers only, never message text.
 */
export interface GenAiCallContext {
  botId?: string;
  pipelineId?: string;
  /** Conveyor's conversation id (the history the call continues). */
  conversationId?: string;
  /** The chat the message came from: bot, launcher type and launcher id. */
  sessionId?: string;
  /** The platform's id of the sender. */
  userId?: string;
  /** Record prompts and answers on the spans (the opt-in above). */
  captureContent?: boolean;
}

/** The session a Langfuse or Phoenix view groups by: one chat of one bot (LangBot's `person_123`, per bot). */
export function sessionIdOf(botId: string, launcherType: string, launcherId: string): string {
  return `${botId}:${launcherType}_${launcherId}`;
}

export function contextSpanAttributes(ctx: GenAiCallContext | undefined): Attributes {
  if (!ctx) return {};
  return {
    ...(ctx.conversationId ? { 'gen_ai.conversation.id': ctx.conversationId } : {}),
    ...(ctx.sessionId ? { 'session.id': ctx.sessionId } : {}),
    ...(ctx.userId ? { 'user.id': ctx.userId } : {}),
    ...(ctx.botId ? { 'conveyor.bot.id': ctx.botId } : {}),
    ...(ctx.pipelineId ? { 'conveyor.pipeline.id': ctx.pipelineId } : {}),
  };
}

/** The bot and pipeline on the GenAI metrics: two bounded dimensions (configured ids), unlike session or user. */
export function contextMetricAttributes(ctx: GenAiCallContext | undefined): Attributes {
  return {
    ...(ctx?.botId ? { 'conveyor.bot.id': ctx.botId } : {}),
    ...(ctx?.pipelineId ? { 'conveyor.pipeline.id': ctx.pipelineId } : {}),
  };
}
