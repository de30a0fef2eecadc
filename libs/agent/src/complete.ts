import { SpanKind } from '@opentelemetry/api';
import type OpenAI from 'openai';
import type { LlmMessage } from '@conveyor/contracts';
import { inSpan, meter } from '@conveyor/telemetry';
import type { OpenAIClientPool } from './client-pool.js';
import type { ResolvedModel } from './model.js';

const tokens = meter.createCounter('conveyor_llm_tokens', { description: 'LLM tokens by direction', unit: '{token}' });
const fallbacks = meter.createCounter('conveyor_llm_fallbacks', { description: 'Model calls that failed and moved on to the next model' });
const callDuration = meter.createHistogram('conveyor_llm_call_duration', { description: 'LLM call latency', unit: 's' });

export interface CompletionResult {
  model: ResolvedModel;
  message: LlmMessage;
  finishReason: string | null;
}

export class NoModelConfiguredError extends Error {
  constructor() {
    super('No LLM model configured');
  }
}

export class AllModelsFailedError extends Error {
  constructor(readonly causes: Error[]) {
    super(`all ${causes.length} models failed: ${causes.map((c) => c.message).join('; ')}`);
  }
}

/** One non-streaming chat completion, in a span with the GenAI semantic attributes. */
export async function complete(pool: OpenAIClientPool, model: ResolvedModel, messages: LlmMessage[], signal?: AbortSignal): Promise<CompletionResult> {
  return inSpan(
    `chat ${model.modelId}`,
    { 'gen_ai.system': 'openai', 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model.modelId, 'conveyor.model.id': model.id },
    async (span) => {
      const started = performance.now();
      const response = await pool.get(model).chat.completions.create(
        { ...model.extraArgs, model: model.modelId, messages: messages as OpenAI.ChatCompletionMessageParam[], stream: false },
        { signal },
      );
      callDuration.record((performance.now() - started) / 1000, { model: model.id });
      const choice = response.choices[0];
      if (!choice) throw new Error(`model ${model.id} returned no choices`);
      const usage = response.usage;
      if (usage) {
        span.setAttributes({ 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
        tokens.add(usage.prompt_tokens, { model: model.id, direction: 'input' });
        tokens.add(usage.completion_tokens, { model: model.id, direction: 'output' });
      }
      span.setAttributes({ 'gen_ai.response.model': response.model, 'gen_ai.response.finish_reasons': [choice.finish_reason ?? ''] });
      const toolCalls = choice.message.tool_calls?.filter((c) => c.type === 'function');
      return {
        model,
        finishReason: choice.finish_reason,
        message: {
          role: 'assistant',
          content: choice.message.content ?? '',
          ...(toolCalls?.length ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: c.function })) } : {}),
        },
      };
    },
    SpanKind.CLIENT,
  );
}

/** LangBot's non-streaming fallback: try the primary, then each fallback in order, moving on at any error. */
export async function completeWithFallback(
  pool: OpenAIClientPool,
  models: ResolvedModel[],
  messages: LlmMessage[],
  signal?: AbortSignal,
  onFallback?: (failed: ResolvedModel, err: Error) => void,
): Promise<CompletionResult> {
  if (models.length === 0) throw new NoModelConfiguredError();
  const causes: Error[] = [];
  for (const model of models) {
    try {
      return await complete(pool, model, messages, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      causes.push(err as Error);
      fallbacks.add(1, { model: model.id });
      onFallback?.(model, err as Error);
    }
  }
  throw new AllModelsFailedError(causes);
}
