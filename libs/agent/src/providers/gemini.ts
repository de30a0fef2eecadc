import { randomUUID } from 'node:crypto';
import type { LlmMessage, ReasoningBlock } from '@conveyor/contracts';
import type { ToolDefinition } from '../llm-call.js';
import type { StreamDelta } from '../stream-accumulator.js';
import { withReasoning } from '../think.js';
import { geminiThinkingConfig } from './reasoning.js';
import { apiRoot, assistantText, boundedJson, dataUrl, lines, MAX_EMBEDDINGS_ANSWER_BYTES, partsOf, postJson, systemText, toolArguments, toolNamesById, toolResultText, vectorsOf } from './shared.js';
import { ProviderAnswerError, type EmbeddingCall, type ModelProvider, type ProviderCall, type ProviderCompletion, type ProviderEmbeddings, type ProviderStreamItem, type TokenUsage } from './types.js';

// Google's Generative Language API (`generateContent`, `streamGenerateContent?alt=sse`) over its
// REST wire format: the shapes below are the parts of it Conveyor sends and reads.

export interface GeminiPart {
  text?: string;
  /** A thought summary (with `includeThoughts`): reasoning, not the answer. */
  thought?: boolean;
  /** Opaque; must go back on the same part in the turn's next requests (function calls above all). */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType: string; fileUri: string };
  functionCall?: { name: string; args?: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response: Record<string, unknown>; id?: string };
}

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiResponse {
  candidates?: Array<{ content?: { role?: string; parts?: GeminiPart[] }; finishReason?: string }>;
  usageMetadata?: { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number; cachedContentTokenCount?: number };
  modelVersion?: string;
  responseId?: string;
  promptFeedback?: { blockReason?: string };
}

const IMAGE_MIME_BY_EXTENSION: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', heic: 'image/heic' };

function imagePart(url: string): GeminiPart {
  const inline = dataUrl(url);
  if (inline) return { inlineData: inline };
  const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase() ?? '';
  return { fileData: { mimeType: IMAGE_MIME_BY_EXTENSION[extension] ?? 'image/jpeg', fileUri: url } };
}

function userParts(content: LlmMessage['content']): GeminiPart[] {
  return partsOf(content).map((p) => (p.type === 'text' ? { text: p.text } : imagePart(p.image_url.url)));
}

/**
 * The loop's history as Gemini contents: system messages become `systemInstruction`; an assistant
 * turn a `model` turn with its text and a `functionCall` part per call, each thought signature back
 * on the part it came with; tool results `functionResponse` parts of one user turn (Gemini wants the
 * answers to one turn's calls together). Same-role neighbours are merged.
 */
export function geminiContents(messages: readonly LlmMessage[]): { systemInstruction?: { parts: GeminiPart[] }; contents: GeminiContent[] } {
  const names = toolNamesById(messages);
  const contents: GeminiContent[] = [];
  const push = (role: 'user' | 'model', parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.role === 'user') push('user', userParts(m.content));
    else if (m.role === 'tool') {
      push('user', [{ functionResponse: { name: names.get(m.tool_call_id ?? '') ?? m.name ?? 'tool', response: { result: toolResultText(m) } } }]);
    } else {
      const signatures = new Map<string | undefined, string>();
      for (const b of m.reasoning_blocks ?? []) if (b.type === 'thought_signature') signatures.set(b.tool_call_id, b.signature);
      const parts: GeminiPart[] = [];
      const text = assistantText(m);
      const textSignature = signatures.get(undefined);
      if (text || textSignature) parts.push({ text, ...(textSignature ? { thoughtSignature: textSignature } : {}) });
      for (const call of m.tool_calls ?? []) {
        const signature = signatures.get(call.id);
        parts.push({ functionCall: { name: call.function.name, args: toolArguments(call) }, ...(signature ? { thoughtSignature: signature } : {}) });
      }
      push('model', parts);
    }
  }
  const system = systemText(messages);
  return { ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}), contents };
}

export function geminiTools(tools: readonly ToolDefinition[]) {
  // `parametersJsonSchema` takes the tool's JSON Schema as MCP servers write it (`parameters` is an OpenAPI subset).
  return [{ functionDeclarations: tools.map((t) => ({ name: t.function.name, ...(t.function.description ? { description: t.function.description } : {}), parametersJsonSchema: t.function.parameters ?? { type: 'object' } })) }];
}

/** OpenAI-style extra arguments the generation config has under other names. */
const GENERATION_ARGS: readonly [openAi: string, gemini: string][] = [
  ['temperature', 'temperature'],
  ['top_p', 'topP'],
  ['top_k', 'topK'],
  ['max_tokens', 'maxOutputTokens'],
  ['max_completion_tokens', 'maxOutputTokens'],
  ['presence_penalty', 'presencePenalty'],
  ['frequency_penalty', 'frequencyPenalty'],
  ['seed', 'seed'],
];

/**
 * The request body. Extra arguments: `generationConfig`, `safetySettings` and `toolConfig` as Gemini
 * has them, and the OpenAI names of the sampling parameters (`temperature`, `top_p`, `max_tokens`,
 * `stop`, ...) mapped into the generation config.
 */
export function geminiRequest(call: Pick<ProviderCall, 'model' | 'messages' | 'tools'>) {
  const { model, tools } = call;
  const extra = model.extraArgs;
  const generationConfig: Record<string, unknown> = typeof extra.generationConfig === 'object' && extra.generationConfig !== null ? { ...extra.generationConfig } : {};
  for (const [from, to] of GENERATION_ARGS) if (typeof extra[from] === 'number') generationConfig[to] = extra[from];
  if (typeof extra.stop === 'string') generationConfig.stopSequences = [extra.stop];
  else if (Array.isArray(extra.stop)) generationConfig.stopSequences = extra.stop;
  const thinking = geminiThinkingConfig(model.reasoning);
  if (thinking) generationConfig.thinkingConfig = thinking;
  return {
    ...geminiContents(call.messages),
    ...(tools?.length ? { tools: geminiTools(tools), ...(extra.toolConfig ? { toolConfig: extra.toolConfig } : {}) } : {}),
    ...(extra.safetySettings ? { safetySettings: extra.safetySettings } : {}),
    ...(Object.keys(generationConfig).length ? { generationConfig } : {}),
  };
}

export function geminiFinishReason(reason: string | undefined, calledTools: boolean): string | null {
  if (!reason) return null;
  if (calledTools) return 'tool_calls';
  switch (reason) {
    case 'STOP':
      return 'stop';
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
      return 'content_filter';
    default:
      return reason.toLowerCase();
  }
}

function usageOf(u: NonNullable<GeminiResponse['usageMetadata']>): TokenUsage {
  // Thinking tokens are billed as output, as OpenAI's reasoning tokens are counted in completion_tokens.
  return { prompt_tokens: u.promptTokenCount ?? 0, completion_tokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0) };
}

function endpoint(call: Pick<ProviderCall, 'model'>, method: 'generateContent' | 'streamGenerateContent' | 'batchEmbedContents'): string {
  const root = apiRoot(call.model.baseUrl, ['/openai']);
  return `${root}/models/${encodeURIComponent(modelName(call))}:${method}${method === 'streamGenerateContent' ? '?alt=sse' : ''}`;
}

function modelName(call: Pick<ProviderCall, 'model'>): string {
  return call.model.modelId.replace(/^models\//, '');
}

/**
 * The `batchEmbedContents` request: one `EmbedContentRequest` per text, each naming the model, with
 * `taskType`, `title` and `outputDimensionality` (or `dimensions`) from the model's extra arguments.
 */
export function geminiEmbedRequest(call: Pick<EmbeddingCall, 'model' | 'texts'>) {
  const { extraArgs } = call.model;
  const extra: Record<string, unknown> = {};
  if (typeof extraArgs.taskType === 'string') extra.taskType = extraArgs.taskType;
  if (typeof extraArgs.title === 'string') extra.title = extraArgs.title;
  const dimensions = extraArgs.outputDimensionality ?? extraArgs.dimensions;
  if (typeof dimensions === 'number') extra.outputDimensionality = dimensions;
  const model = `models/${modelName(call)}`;
  return { requests: call.texts.map((text) => ({ model, content: { parts: [{ text }] }, ...extra })) };
}

function headers(call: Pick<ProviderCall, 'model'>): Record<string, string> {
  return call.model.apiKey ? { 'x-goog-api-key': call.model.apiKey } : {};
}

/** Reads one response (or streamed chunk) into deltas; `ids` numbers the function calls across chunks. */
class GeminiReader {
  private calls = 0;
  readonly blocks: ReasoningBlock[] = [];

  read(r: GeminiResponse): { delta: StreamDelta; usage?: TokenUsage } {
    const candidate = r.candidates?.[0];
    const d: StreamDelta = {};
    let content = '';
    let reasoning = '';
    const blocks: ReasoningBlock[] = [];
    for (const part of candidate?.content?.parts ?? []) {
      if (part.functionCall) {
        const id = part.functionCall.id || `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
        (d.toolCalls ??= []).push({ index: this.calls++, id, name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) });
        if (part.thoughtSignature) blocks.push({ type: 'thought_signature', signature: part.thoughtSignature, tool_call_id: id });
        continue;
      }
      if (part.thoughtSignature) blocks.push({ type: 'thought_signature', signature: part.thoughtSignature });
      if (typeof part.text === 'string') {
        if (part.thought) reasoning += part.text;
        else content += part.text;
      }
    }
    if (content) d.content = content;
    if (reasoning) d.reasoning = reasoning;
    if (blocks.length) {
      d.blocks = blocks;
      this.blocks.push(...blocks);
    }
    if (r.promptFeedback?.blockReason && !candidate) d.finishReason = 'content_filter';
    else if (candidate?.finishReason) d.finishReason = geminiFinishReason(candidate.finishReason, this.calls > 0);
    return { delta: d, ...(r.usageMetadata ? { usage: usageOf(r.usageMetadata) } : {}) };
  }
}

/** Gemini's native API (`generativelanguage.googleapis.com`), over its REST and SSE wire format. */
export const geminiProvider: ModelProvider = {
  kind: 'gemini',
  genAiProviderName: () => 'gcp.gemini',

  async complete(call): Promise<ProviderCompletion> {
    const res = await postJson(endpoint(call, 'generateContent'), headers(call), geminiRequest(call), call);
    const body = (await res.json()) as GeminiResponse;
    const reader = new GeminiReader();
    const { delta, usage } = reader.read(body);
    const toolCalls = (delta.toolCalls ?? []).map((c) => ({ id: c.id ?? '', type: 'function' as const, function: { name: c.name ?? '', arguments: c.arguments ?? '{}' } }));
    const content = withReasoning(delta.content ?? '', delta.reasoning, call.removeThink);
    return {
      finishReason: delta.finishReason ?? null,
      usage,
      responseId: body.responseId,
      responseModel: body.modelVersion,
      message: {
        role: 'assistant',
        content: toolCalls.length && !content ? null : content,
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        ...(reader.blocks.length ? { reasoning_blocks: reader.blocks } : {}),
      },
    };
  },

  async *stream(call): AsyncGenerator<ProviderStreamItem> {
    const res = await postJson(endpoint(call, 'streamGenerateContent'), headers(call), geminiRequest(call), call);
    const reader = new GeminiReader();
    let data = '';
    for await (const line of lines(res.body!)) {
      // SSE: `data:` lines of one event, ended by a blank line.
      if (line.startsWith('data:')) {
        data += line.slice(5).trimStart();
        continue;
      }
      if (line !== '' || !data) continue;
      const chunk: GeminiResponse & { error?: { message?: string } } = JSON.parse(data);
      data = '';
      if (chunk.error) throw new Error(`gemini stream error: ${chunk.error.message ?? 'unknown'}`);
      yield { kind: 'response', id: chunk.responseId, model: chunk.modelVersion };
      const { delta, usage } = reader.read(chunk);
      if (usage) yield { kind: 'usage', usage };
      yield { kind: 'delta', delta };
    }
    if (data) {
      const chunk: GeminiResponse = JSON.parse(data);
      const { delta, usage } = reader.read(chunk);
      if (usage) yield { kind: 'usage', usage };
      yield { kind: 'delta', delta };
    }
  },

  // `batchEmbedContents`: `{embeddings: [{values: [...]}]}`, in the requests' order; it reports no token count.
  async embed(call): Promise<ProviderEmbeddings> {
    const res = await postJson(endpoint(call, 'batchEmbedContents'), headers(call), geminiEmbedRequest(call), call);
    const body = await boundedJson(res, MAX_EMBEDDINGS_ANSWER_BYTES);
    const embeddings = typeof body === 'object' && body !== null ? (body as { embeddings?: unknown }).embeddings : undefined;
    if (!Array.isArray(embeddings)) throw new ProviderAnswerError('gemini batchEmbedContents: no embeddings in the answer');
    const values = embeddings.map((e: unknown) => (typeof e === 'object' && e !== null ? (e as { values?: unknown }).values : undefined));
    return { vectors: vectorsOf(values, call.texts.length, 'gemini batchEmbedContents') };
  },
};
