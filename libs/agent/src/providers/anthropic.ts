import type Anthropic from '@anthropic-ai/sdk';
import type { LlmMessage, ReasoningBlock } from '@conveyor/contracts';
import type { ToolDefinition } from '../llm-call.js';
import type { ResolvedModel } from '../model.js';
import type { StreamDelta } from '../stream-accumulator.js';
import { withReasoning } from '../think.js';
import { anthropicThinking } from './reasoning.js';
import { assistantText, dataUrl, partsOf, systemText, toolArguments, toolResultText } from './shared.js';
import type { ModelProvider, ProviderCall, ProviderCompletion, ProviderStreamItem, TokenUsage } from './types.js';

type MessageParam = Anthropic.MessageParam;
type BlockParam = Anthropic.ContentBlockParam;
type ImageMediaType = Anthropic.Base64ImageSource['media_type'];

const IMAGE_TYPES: readonly ImageMediaType[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** The Messages API requires `max_tokens`; this is what a model without one in its extra arguments gets. */
export const DEFAULT_MAX_TOKENS = 4096;

function imageBlock(url: string): Anthropic.ImageBlockParam | Anthropic.TextBlockParam {
  const inline = dataUrl(url);
  if (!inline) return { type: 'image', source: { type: 'url', url } };
  const mediaType = IMAGE_TYPES.find((t) => t === inline.mimeType);
  // An image type the API does not take is named rather than refused with the whole request.
  return mediaType ? { type: 'image', source: { type: 'base64', media_type: mediaType, data: inline.data } } : { type: 'text', text: `[image of type ${inline.mimeType}]` };
}

function contentBlocks(content: LlmMessage['content']): Array<Anthropic.TextBlockParam | Anthropic.ImageBlockParam> {
  return partsOf(content).map((p) => (p.type === 'text' ? { type: 'text' as const, text: p.text } : imageBlock(p.image_url.url)));
}

function reasoningBlockParam(block: ReasoningBlock): BlockParam | null {
  if (block.type === 'thinking') return block.signature !== undefined ? { type: 'thinking', thinking: block.thinking, signature: block.signature } : null;
  if (block.type === 'redacted_thinking') return { type: 'redacted_thinking', data: block.data };
  return null;
}

/**
 * The loop's OpenAI-shaped history as Messages API turns: system messages become the `system`
 * parameter; an assistant turn its thinking blocks (signature and all, first, as the API wants them
 * back), its text without the `<think>` rendering and a `tool_use` block per call; tool results
 * `tool_result` blocks of a user turn. Turns of the same role next to each other are merged, since
 * the API alternates user and assistant.
 */
export function anthropicMessages(messages: readonly LlmMessage[]): { system: string; messages: MessageParam[] } {
  const out: MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: BlockParam[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.role === 'user') push('user', contentBlocks(m.content));
    else if (m.role === 'tool') {
      const parts = partsOf(m.content);
      const content = parts.some((p) => p.type === 'image_url') ? contentBlocks(m.content) : toolResultText(m);
      push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content, ...(toolResultText(m).startsWith('err: ') ? { is_error: true } : {}) }]);
    } else {
      const blocks: BlockParam[] = (m.reasoning_blocks ?? []).map(reasoningBlockParam).filter((b): b is BlockParam => b !== null);
      const text = assistantText(m);
      if (text) blocks.push({ type: 'text', text });
      for (const call of m.tool_calls ?? []) blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolArguments(call) });
      push('assistant', blocks);
    }
  }
  return { system: systemText(messages), messages: out };
}

export function anthropicTools(tools: readonly ToolDefinition[]): Anthropic.Tool[] {
  return tools.map((t) => ({
    name: t.function.name,
    ...(t.function.description ? { description: t.function.description } : {}),
    input_schema: { type: 'object', ...(t.function.parameters ?? {}) },
  }));
}

/** OpenAI's `tool_choice` spellings in a model's extra arguments, as the Messages API has them. */
function toolChoice(value: unknown): Anthropic.ToolChoice {
  if (value === 'required') return { type: 'any' };
  if (value === 'none') return { type: 'none' };
  if (typeof value === 'object' && value !== null && 'type' in value && (value.type === 'auto' || value.type === 'any' || value.type === 'none')) return { type: value.type };
  return { type: 'auto' };
}

/** The request body. Extra arguments are spread as they are (the operator's Messages API parameters), except those mapped here. */
export function anthropicRequest(call: Pick<ProviderCall, 'model' | 'messages' | 'tools'>): Anthropic.MessageCreateParamsNonStreaming {
  const { model, tools } = call;
  const { tool_choice: extraToolChoice, max_tokens: extraMaxTokens, ...extra } = model.extraArgs;
  const { system, messages } = anthropicMessages(call.messages);
  const thinking = anthropicThinking(model.reasoning);
  let maxTokens = typeof extraMaxTokens === 'number' && extraMaxTokens > 0 ? extraMaxTokens : DEFAULT_MAX_TOKENS;
  // The thinking budget counts toward max_tokens and must be below it: room for the answer stays.
  if (thinking?.type === 'enabled' && maxTokens <= thinking.budget_tokens) maxTokens = thinking.budget_tokens + DEFAULT_MAX_TOKENS;
  return {
    ...extra,
    model: model.modelId,
    max_tokens: maxTokens,
    messages,
    ...(system ? { system } : {}),
    ...(tools?.length ? { tools: anthropicTools(tools), tool_choice: toolChoice(extraToolChoice) } : {}),
    ...(thinking ? { thinking } : {}),
  };
}

/** The Messages API's stop reasons in OpenAI's names, which the loop and the spans use. */
export function finishReasonOf(stop: string | null | undefined): string | null {
  switch (stop) {
    case null:
    case undefined:
      return null;
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return stop;
  }
}

interface UsageLike {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** Input tokens include the cached ones (written and read): what the call consumed, as OpenAI counts it. */
function usageOf(u: UsageLike): TokenUsage {
  return { prompt_tokens: (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0), completion_tokens: u.output_tokens ?? 0 };
}

// The SDK is some 270 modules: a runner loads it with the first call to an Anthropic model, not at start.
let sdk: Promise<typeof import('@anthropic-ai/sdk')> | undefined;

async function client(call: ProviderCall): Promise<Anthropic> {
  const { default: AnthropicClient } = await (sdk ??= import('@anthropic-ai/sdk'));
  // Retries are the fallback chain's job; the base URL is the API root (the SDK adds /v1/messages). Its
  // requests go through the pool's model fetch, as the OpenAI clients' do.
  return call.pool.client(
    'anthropic',
    call.model,
    (m: ResolvedModel) => new AnthropicClient({ apiKey: m.apiKey || 'none', authToken: null, baseURL: m.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, ''), timeout: m.timeoutMs, maxRetries: 0, fetch: call.pool.fetch }),
    (c): c is Anthropic => c instanceof AnthropicClient,
  );
}

/** Anthropic's Messages API, through the official SDK. */
export const anthropicProvider: ModelProvider = {
  kind: 'anthropic',
  genAiProviderName: () => 'anthropic',

  async complete(call): Promise<ProviderCompletion> {
    const response = await (await client(call)).messages.create(anthropicRequest(call), { signal: call.signal });
    let text = '';
    let thinking = '';
    const blocks: ReasoningBlock[] = [];
    const toolCalls: NonNullable<LlmMessage['tool_calls']> = [];
    for (const b of response.content) {
      if (b.type === 'text') text += b.text;
      else if (b.type === 'thinking') {
        thinking += b.thinking;
        blocks.push({ type: 'thinking', thinking: b.thinking, signature: b.signature });
      } else if (b.type === 'redacted_thinking') blocks.push({ type: 'redacted_thinking', data: b.data });
      else if (b.type === 'tool_use') toolCalls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
    }
    const content = withReasoning(text, thinking || undefined, call.removeThink);
    return {
      finishReason: finishReasonOf(response.stop_reason),
      usage: usageOf(response.usage),
      responseId: response.id,
      responseModel: response.model,
      message: {
        role: 'assistant',
        content: toolCalls.length && !content ? null : content,
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        ...(blocks.length ? { reasoning_blocks: blocks } : {}),
      },
    };
  },

  async *stream(call): AsyncGenerator<ProviderStreamItem> {
    const events = await (await client(call)).messages.create({ ...anthropicRequest(call), stream: true }, { signal: call.signal });
    // Per content block index: the thinking being streamed (its text and signature come in deltas).
    const thinking = new Map<number, { thinking: string; signature: string }>();
    let input: UsageLike = {};
    for await (const event of events) {
      switch (event.type) {
        case 'message_start':
          input = event.message.usage;
          yield { kind: 'response', id: event.message.id, model: event.message.model };
          break;
        case 'content_block_start': {
          const b = event.content_block;
          if (b.type === 'tool_use') yield delta({ toolCalls: [{ index: event.index, id: b.id, name: b.name }] });
          else if (b.type === 'thinking') thinking.set(event.index, { thinking: b.thinking ?? '', signature: b.signature ?? '' });
          else if (b.type === 'redacted_thinking') yield delta({ blocks: [{ type: 'redacted_thinking', data: b.data }] });
          else if (b.type === 'text' && b.text) yield delta({ content: b.text });
          break;
        }
        case 'content_block_delta': {
          const d = event.delta;
          if (d.type === 'text_delta') yield delta({ content: d.text });
          else if (d.type === 'input_json_delta') yield delta({ toolCalls: [{ index: event.index, arguments: d.partial_json }] });
          else if (d.type === 'thinking_delta') {
            const t = thinking.get(event.index);
            if (t) t.thinking += d.thinking;
            yield delta({ reasoning: d.thinking });
          } else if (d.type === 'signature_delta') {
            const t = thinking.get(event.index);
            if (t) t.signature += d.signature;
          }
          break;
        }
        case 'content_block_stop': {
          const t = thinking.get(event.index);
          if (t) {
            thinking.delete(event.index);
            yield delta({ blocks: [{ type: 'thinking', thinking: t.thinking, signature: t.signature }] });
          }
          break;
        }
        case 'message_delta':
          // The input side comes with message_start; the delta's usage is cumulative for the output.
          yield { kind: 'usage', usage: usageOf({ ...input, ...definedOf(event.usage), output_tokens: event.usage.output_tokens }) };
          if (event.delta.stop_reason) yield delta({ finishReason: finishReasonOf(event.delta.stop_reason) });
          break;
        case 'message_stop':
          break;
      }
    }
  },
};

function delta(d: StreamDelta): ProviderStreamItem {
  return { kind: 'delta', delta: d };
}

/** The usage fields the delta set (a null there means "not counted in this event", not zero). */
function definedOf(u: UsageLike): UsageLike {
  return Object.fromEntries(Object.entries(u).filter(([, v]) => typeof v === 'number'));
}
