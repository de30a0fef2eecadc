import { randomUUID } from 'node:crypto';
import type { LlmMessage } from '@conveyor/contracts';
import type { StreamDelta } from '../stream-accumulator.js';
import { withReasoning } from '../think.js';
import { ollamaThink } from './reasoning.js';
import { apiRoot, assistantText, boundedJson, dataUrl, lines, MAX_EMBEDDINGS_ANSWER_BYTES, partsOf, postJson, toolArguments, toolNamesById, toolResultText, vectorsOf } from './shared.js';
import type { EmbeddingCall, ModelProvider, ProviderCall, ProviderCompletion, ProviderEmbeddings, ProviderStreamItem, TokenUsage } from './types.js';

// Ollama's own chat API, `POST /api/chat`: NDJSON when streaming, one JSON object otherwise.

export interface OllamaMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** Base64 images (no data: prefix) for vision models. */
  images?: string[];
  thinking?: string;
  tool_calls?: Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
  /** A tool result names the function it answers. */
  tool_name?: string;
}

export interface OllamaChatLine {
  model?: string;
  message?: { role?: string; content?: string; thinking?: string; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: Record<string, unknown> | string } }> };
  done?: boolean;
  done_reason?: string;
  prompt_eval_count?: number;
  eval_count?: number;
  error?: string;
}

/** The loop's history as Ollama messages: text content, base64 images, tool calls with object arguments, tool results by name. */
export function ollamaMessages(messages: readonly LlmMessage[]): OllamaMessage[] {
  const names = toolNamesById(messages);
  return messages.map((m): OllamaMessage => {
    if (m.role === 'tool') return { role: 'tool', content: toolResultText(m), tool_name: names.get(m.tool_call_id ?? '') ?? m.name ?? 'tool' };
    if (m.role === 'assistant') {
      const thinking = (m.reasoning_blocks ?? []).map((b) => (b.type === 'thinking' ? b.thinking : '')).join('');
      return {
        role: 'assistant',
        content: assistantText(m),
        ...(thinking ? { thinking } : {}),
        ...(m.tool_calls?.length ? { tool_calls: m.tool_calls.map((c) => ({ function: { name: c.function.name, arguments: toolArguments(c) } })) } : {}),
      };
    }
    const parts = partsOf(m.content);
    const images = parts.flatMap((p) => (p.type === 'image_url' ? [dataUrl(p.image_url.url)?.data ?? null] : [])).filter((d): d is string => d !== null);
    const text = parts.map((p) => (p.type === 'text' ? p.text : dataUrl(p.image_url.url) ? '' : `[image ${p.image_url.url}]`)).join('');
    return { role: m.role, content: text, ...(images.length ? { images } : {}) };
  });
}

/** Request-level keys of /api/chat; every other extra argument is a model option (`temperature`, `num_ctx`, ...). */
const TOP_LEVEL = new Set(['format', 'keep_alive', 'options', 'think']);
const OPTION_NAMES: Record<string, string> = { max_tokens: 'num_predict', max_completion_tokens: 'num_predict' };

export function ollamaRequest(call: Pick<ProviderCall, 'model' | 'messages' | 'tools'>, stream: boolean) {
  const { model, tools } = call;
  const top: Record<string, unknown> = {};
  const options: Record<string, unknown> = typeof model.extraArgs.options === 'object' && model.extraArgs.options !== null ? { ...model.extraArgs.options } : {};
  for (const [key, value] of Object.entries(model.extraArgs)) {
    if (TOP_LEVEL.has(key)) {
      if (key !== 'options') top[key] = value;
    } else if (key !== 'tool_choice') options[OPTION_NAMES[key] ?? key] = value;
  }
  const think = ollamaThink(model.reasoning);
  return {
    ...top,
    model: model.modelId,
    messages: ollamaMessages(call.messages),
    stream,
    ...(tools?.length ? { tools } : {}),
    ...(Object.keys(options).length ? { options } : {}),
    ...(think !== undefined ? { think } : {}),
  };
}

function finishReason(line: OllamaChatLine, calledTools: boolean): string | null {
  if (!line.done) return null;
  if (calledTools) return 'tool_calls';
  return line.done_reason === 'length' ? 'length' : 'stop';
}

function usageOf(line: OllamaChatLine): TokenUsage | undefined {
  return line.done ? { prompt_tokens: line.prompt_eval_count ?? 0, completion_tokens: line.eval_count ?? 0 } : undefined;
}

/** Reads lines into deltas; tool calls come whole, each numbered and given an id when Ollama has none. */
class OllamaReader {
  private calls = 0;
  private thinking = '';

  read(line: OllamaChatLine): StreamDelta {
    if (line.error) throw new Error(`ollama: ${line.error.slice(0, 1000)}`);
    const m = line.message ?? {};
    const d: StreamDelta = {};
    if (m.content) d.content = m.content;
    if (m.thinking) {
      d.reasoning = m.thinking;
      this.thinking += m.thinking;
    }
    for (const call of m.tool_calls ?? []) {
      const args = call.function?.arguments;
      (d.toolCalls ??= []).push({
        index: this.calls++,
        id: call.id || `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
        name: call.function?.name ?? '',
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      });
    }
    const finish = finishReason(line, this.calls > 0);
    // The thinking text goes back with the assistant turn (Ollama takes `thinking` on it).
    if (finish && this.thinking) d.blocks = [{ type: 'thinking', thinking: this.thinking }];
    if (finish) d.finishReason = finish;
    return d;
  }
}

function endpoint(call: Pick<ProviderCall, 'model'>, path: '/api/chat' | '/api/embed'): string {
  return `${apiRoot(call.model.baseUrl, ['/v1', '/api'])}${path}`;
}

/** The `/api/embed` request: every text in one call; `truncate`, `dimensions`, `keep_alive` and `options` from the model's extra arguments. */
export function ollamaEmbedRequest(call: Pick<EmbeddingCall, 'model' | 'texts'>) {
  const extra: Record<string, unknown> = {};
  for (const key of ['truncate', 'dimensions', 'keep_alive', 'options']) if (call.model.extraArgs[key] !== undefined) extra[key] = call.model.extraArgs[key];
  return { ...extra, model: call.model.modelId, input: [...call.texts] };
}

function headers(call: Pick<ProviderCall, 'model'>): Record<string, string> {
  // A local Ollama needs no key; Ollama's cloud and proxies in front of it take a bearer token.
  return call.model.apiKey ? { authorization: `Bearer ${call.model.apiKey}` } : {};
}

/** Ollama's native `/api/chat`. */
export const ollamaProvider: ModelProvider = {
  kind: 'ollama',
  genAiProviderName: () => 'ollama',

  async complete(call): Promise<ProviderCompletion> {
    const res = await postJson(endpoint(call, '/api/chat'), headers(call), ollamaRequest(call, false), call);
    const line = (await res.json()) as OllamaChatLine;
    const reader = new OllamaReader();
    const d = reader.read({ ...line, done: true });
    const toolCalls = (d.toolCalls ?? []).map((c) => ({ id: c.id ?? '', type: 'function' as const, function: { name: c.name ?? '', arguments: c.arguments ?? '{}' } }));
    const content = withReasoning(d.content ?? '', d.reasoning, call.removeThink);
    return {
      finishReason: d.finishReason ?? null,
      usage: usageOf({ ...line, done: true }),
      responseModel: line.model,
      message: {
        role: 'assistant',
        content: toolCalls.length && !content ? null : content,
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        ...(d.blocks?.length ? { reasoning_blocks: d.blocks } : {}),
      },
    };
  },

  async *stream(call): AsyncGenerator<ProviderStreamItem> {
    const res = await postJson(endpoint(call, '/api/chat'), headers(call), ollamaRequest(call, true), call);
    const reader = new OllamaReader();
    let first = true;
    for await (const text of lines(res.body!)) {
      if (!text.trim()) continue;
      const line: OllamaChatLine = JSON.parse(text);
      if (first && line.model) yield { kind: 'response', model: line.model };
      first = false;
      const delta = reader.read(line);
      const usage = usageOf(line);
      if (usage) yield { kind: 'usage', usage };
      yield { kind: 'delta', delta };
      if (line.done) return;
    }
    throw new Error('ollama: the stream ended before its last line (done)');
  },

  // `POST /api/embed`: `{model, embeddings: [[...]], prompt_eval_count}`.
  async embed(call): Promise<ProviderEmbeddings> {
    const res = await postJson(endpoint(call, '/api/embed'), headers(call), ollamaEmbedRequest(call), call);
    const body = await boundedJson(res, MAX_EMBEDDINGS_ANSWER_BYTES);
    const answer = typeof body === 'object' && body !== null ? (body as { model?: unknown; embeddings?: unknown; prompt_eval_count?: unknown }) : {};
    return {
      vectors: vectorsOf(answer.embeddings, call.texts.length, 'ollama /api/embed'),
      ...(typeof answer.prompt_eval_count === 'number' ? { inputTokens: answer.prompt_eval_count } : {}),
      ...(typeof answer.model === 'string' ? { responseModel: answer.model } : {}),
    };
  },
};
