import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type OpenAI from 'openai';
import type { LlmMessage } from '@conveyor/contracts';
import { inSpan, tracer } from '@conveyor/telemetry';
import type { OpenAIClientPool } from './client-pool.js';
import type { ResolvedModel } from './model.js';
import { agentMetrics } from './metrics.js';
import type { StreamDelta } from './stream-accumulator.js';
import { withReasoning } from './think.js';
import { scopedSignal } from './scoped-signal.js';

/** A tool as described to the model (OpenAI function format, LangBot 11.2). */
export type ToolDefinition = OpenAI.ChatCompletionFunctionTool;

export interface CallOptions {
  /** Omitted or empty: the request carries no tools (models without func_call, or the capped last call). */
  tools?: ToolDefinition[];
  removeThink: boolean;
  signal?: AbortSignal;
}

export interface Completion {
  message: LlmMessage;
  finishReason: string | null;
}

function request(model: ResolvedModel, messages: LlmMessage[], opts: CallOptions) {
  return {
    ...model.extraArgs,
    model: model.modelId,
    messages: messages as OpenAI.ChatCompletionMessageParam[],
    ...(opts.tools?.length ? { tools: opts.tools, tool_choice: (model.extraArgs.tool_choice as OpenAI.ChatCompletionToolChoiceOption) ?? 'auto' } : {}),
  };
}

function spanAttributes(model: ResolvedModel, streaming: boolean, opts: CallOptions) {
  return {
    'gen_ai.system': 'openai',
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': model.modelId,
    'conveyor.model.id': model.id,
    'conveyor.llm.stream': streaming,
    'conveyor.llm.tools': opts.tools?.length ?? 0,
  };
}

function recordUsage(span: Span, model: ResolvedModel, usage: OpenAI.CompletionUsage | null | undefined): void {
  if (!usage) return;
  span.setAttributes({ 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
  agentMetrics.tokens.add(usage.prompt_tokens, { model: model.id, direction: 'input' });
  agentMetrics.tokens.add(usage.completion_tokens, { model: model.id, direction: 'output' });
}

/** One non-streaming chat completion, in a CLIENT span with the GenAI attributes. */
export function complete(pool: OpenAIClientPool, model: ResolvedModel, messages: LlmMessage[], opts: CallOptions): Promise<Completion> {
  return inSpan(
    `chat ${model.modelId}`,
    spanAttributes(model, false, opts),
    async (span) => {
      const started = performance.now();
      const scope = scopedSignal(opts.signal);
      const response = await pool.get(model).chat.completions.create({ ...request(model, messages, opts), stream: false }, { signal: scope.signal }).finally(scope.release);
      agentMetrics.callDuration.record((performance.now() - started) / 1000, { model: model.id });
      const choice = response.choices?.[0];
      if (!choice) throw new Error(`model ${model.id} returned no choices`);
      recordUsage(span, model, response.usage);
      span.setAttributes({ 'gen_ai.response.model': response.model, 'gen_ai.response.finish_reasons': [choice.finish_reason ?? ''] });
      const reasoning = (choice.message as { reasoning_content?: string }).reasoning_content;
      const toolCalls = choice.message.tool_calls?.filter((c) => c.type === 'function') ?? [];
      const content = withReasoning(choice.message.content ?? '', reasoning, opts.removeThink);
      return {
        finishReason: choice.finish_reason,
        message: {
          role: 'assistant',
          content: toolCalls.length && !content ? null : content,
          ...(toolCalls.length ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: c.function })) } : {}),
        },
      };
    },
    SpanKind.CLIENT,
  );
}

/**
 * One streamed chat completion as normalized deltas. The span lives until the stream ends (or the
 * consumer stops early), and records time to first token: what a streaming user waits for.
 */
export async function* streamChat(pool: OpenAIClientPool, model: ResolvedModel, messages: LlmMessage[], opts: CallOptions): AsyncGenerator<StreamDelta> {
  const span = tracer.startSpan(`chat ${model.modelId}`, { kind: SpanKind.CLIENT, attributes: spanAttributes(model, true, opts) });
  const started = performance.now();
  let first = true;
  const finishReasons: string[] = [];
  const scope = scopedSignal(opts.signal);
  try {
    const stream = await pool.get(model).chat.completions.create(
      { ...request(model, messages, opts), stream: true, stream_options: { include_usage: true } },
      { signal: scope.signal },
    );
    for await (const chunk of stream) {
      recordUsage(span, model, chunk.usage);
      if (chunk.model) span.setAttribute('gen_ai.response.model', chunk.model);
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      if (first) {
        first = false;
        const ttft = (performance.now() - started) / 1000;
        span.setAttribute('gen_ai.server.time_to_first_token', ttft);
        agentMetrics.timeToFirstToken.record(ttft, { model: model.id });
      }
      const d = choice.delta ?? {};
      const reasoning = (d as { reasoning_content?: string | null }).reasoning_content;
      if (choice.finish_reason) finishReasons.push(choice.finish_reason);
      yield {
        ...(d.content ? { content: d.content } : {}),
        ...(reasoning ? { reasoning } : {}),
        ...(d.tool_calls?.length
          // A provider that sends no index: the call's position in the delta, as LangBot does.
          ? { toolCalls: d.tool_calls.map((t, i) => ({ index: typeof t.index === 'number' ? t.index : i, id: t.id, name: t.function?.name, arguments: t.function?.arguments })) }
          : {}),
        finishReason: choice.finish_reason ?? null,
      };
    }
    // The SDK ends an aborted stream quietly; without this a stopping runner would finish the run
    // with a truncated reply instead of handing it back to another replica.
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error('aborted');
    span.setAttribute('gen_ai.response.finish_reasons', finishReasons);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    scope.release();
    agentMetrics.callDuration.record((performance.now() - started) / 1000, { model: model.id });
    span.end();
  }
}
