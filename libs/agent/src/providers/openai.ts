import type OpenAI from 'openai';
import type { LlmMessage } from '@conveyor/contracts';
import type { ResolvedModel } from '../model.js';
import type { StreamDelta } from '../stream-accumulator.js';
import { withReasoning } from '../think.js';
import { providerName } from '../genai-semconv.js';
import { openAiReasoningEffort } from './reasoning.js';
import { ProviderAnswerError, type ModelProvider, type ProviderCall, type ProviderCompletion, type ProviderEmbeddings, type ProviderStreamItem } from './types.js';

/** The history as Chat Completions takes it: reasoning blocks are a native provider's and stay out. */
export function openAiMessages(messages: readonly LlmMessage[]): OpenAI.ChatCompletionMessageParam[] {
  return messages.map((m) => {
    if (!m.reasoning_blocks) return m as OpenAI.ChatCompletionMessageParam;
    const { reasoning_blocks: _blocks, ...rest } = m;
    return rest as OpenAI.ChatCompletionMessageParam;
  });
}

export function openAiRequest(call: Pick<ProviderCall, 'model' | 'messages' | 'tools'>) {
  const { model, messages, tools } = call;
  const effort = openAiReasoningEffort(model.reasoning);
  return {
    ...model.extraArgs,
    model: model.modelId,
    messages: openAiMessages(messages),
    ...(tools?.length ? { tools, tool_choice: (model.extraArgs.tool_choice as OpenAI.ChatCompletionToolChoiceOption) ?? 'auto' } : {}),
    ...(effort ? { reasoning_effort: effort as OpenAI.ReasoningEffort } : {}),
  };
}

/** Any OpenAI-compatible Chat Completions endpoint, through the `openai` SDK. */
export const openAiProvider: ModelProvider = {
  kind: 'openai',
  genAiProviderName: (model: ResolvedModel) => providerName(model.baseUrl),

  async complete({ pool, model, messages, tools, removeThink, signal }): Promise<ProviderCompletion> {
    const response = await pool.get(model).chat.completions.create({ ...openAiRequest({ model, messages, tools }), stream: false }, { signal });
    const choice = response.choices?.[0];
    if (!choice) throw new Error(`model ${model.id} returned no choices`);
    const reasoning = (choice.message as { reasoning_content?: string }).reasoning_content;
    const toolCalls = choice.message.tool_calls?.filter((c) => c.type === 'function') ?? [];
    const content = withReasoning(choice.message.content ?? '', reasoning, removeThink);
    return {
      finishReason: choice.finish_reason,
      usage: response.usage ?? undefined,
      responseId: response.id,
      responseModel: response.model,
      message: {
        role: 'assistant',
        content: toolCalls.length && !content ? null : content,
        ...(toolCalls.length ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: c.function })) } : {}),
      },
    };
  },

  async *stream({ pool, model, messages, tools, signal }): AsyncGenerator<ProviderStreamItem> {
    const stream = await pool.get(model).chat.completions.create({ ...openAiRequest({ model, messages, tools }), stream: true, stream_options: { include_usage: true } }, { signal });
    for await (const chunk of stream) {
      yield { kind: 'response', id: chunk.id, model: chunk.model };
      if (chunk.usage) yield { kind: 'usage', usage: chunk.usage };
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const d = choice.delta ?? {};
      const reasoning = (d as { reasoning_content?: string | null }).reasoning_content;
      const delta: StreamDelta = {
        ...(d.content ? { content: d.content } : {}),
        ...(reasoning ? { reasoning } : {}),
        ...(d.tool_calls?.length
          // A provider that sends no index: the call's position in the delta, as LangBot does.
          ? { toolCalls: d.tool_calls.map((t, i) => ({ index: typeof t.index === 'number' ? t.index : i, id: t.id, name: t.function?.name, arguments: t.function?.arguments })) }
          : {}),
        finishReason: choice.finish_reason ?? null,
      };
      yield { kind: 'delta', delta };
    }
  },

  async embed({ pool, model, texts, signal }): Promise<ProviderEmbeddings> {
    const answer = await pool.get(model).embeddings.create({ model: model.modelId, input: [...texts], encoding_format: 'float' }, { signal });
    const byIndex = [...(answer.data ?? [])].sort((a, b) => a.index - b.index);
    if (byIndex.some((d, i) => d.index !== i || !Array.isArray(d.embedding))) throw new ProviderAnswerError(`embeddings answered out of order or without vectors`);
    return { vectors: byIndex.map((d) => d.embedding), inputTokens: answer.usage?.prompt_tokens, responseModel: answer.model };
  },
};
