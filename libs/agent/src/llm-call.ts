import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type OpenAI from 'openai';
import type { LlmMessage } from '@conveyor/contracts';
import { tracer } from '@conveyor/telemetry';
import type { OpenAIClientPool } from './client-pool.js';
import type { ResolvedModel } from './model.js';
import { agentMetrics } from './metrics.js';
import type { StreamDelta } from './stream-accumulator.js';
import { genAiProviderNameOf, providerFor, type ProviderStreamItem, type TokenUsage } from './providers/index.js';
import { costOf, type UsageTally } from './usage.js';
import { scopedSignal } from './scoped-signal.js';
import {
  contextMetricAttributes,
  contextSpanAttributes,
  errorType,
  inputContentAttributes,
  outputContentAttributes,
  requestParameterAttributes,
  serverAttributes,
  type GenAiCallContext,
} from './genai-semconv.js';

/** A tool as described to the model (the OpenAI function format LangBot uses for every tool); each provider maps it to its own. */
export type ToolDefinition = OpenAI.ChatCompletionFunctionTool;

export interface CallOptions {
  /** Omitted or empty: the request carries no tools (models without func_call, or the capped last call). */
  tools?: ToolDefinition[];
  removeThink: boolean;
  signal?: AbortSignal;
  /** Who the call serves and whether its content may be recorded, for its span and metrics. */
  telemetry?: GenAiCallContext;
  /** The run's tally: the call and its usage are added when it ends. */
  usage?: UsageTally;
}

export interface Completion {
  message: LlmMessage;
  finishReason: string | null;
}

/**
 * One model call's span and metrics by the GenAI semantic conventions: a CLIENT span
 * `chat {model}` with the provider, server, request parameters, response and usage, and the
 * `gen_ai.client.*` metrics with the same dimensions plus bot and pipeline. Prompt and answer go on
 * the span only when content capture is on.
 */
class ModelCallTelemetry {
  readonly span: Span;
  private readonly started = performance.now();
  private readonly metricAttributes: Attributes;
  private readonly capture: boolean;
  private readonly tally: UsageTally | undefined;
  private usage: TokenUsage | undefined;
  private responseModel: string | undefined;
  private ended = false;

  constructor(private readonly model: ResolvedModel, streaming: boolean, messages: LlmMessage[], opts: CallOptions) {
    const common: Attributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': genAiProviderNameOf(model),
      'gen_ai.request.model': model.modelId,
      ...serverAttributes(model.baseUrl),
    };
    this.capture = opts.telemetry?.captureContent === true;
    this.tally = opts.usage;
    this.metricAttributes = { ...common, 'conveyor.model.id': model.id, ...contextMetricAttributes(opts.telemetry) };
    this.span = tracer.startSpan(`chat ${model.modelId}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        ...common,
        ...requestParameterAttributes(model.extraArgs),
        ...contextSpanAttributes(opts.telemetry),
        'conveyor.model.id': model.id,
        'conveyor.llm.stream': streaming,
        'conveyor.llm.tools': opts.tools?.length ?? 0,
        ...(this.capture ? inputContentAttributes(messages) : {}),
      },
    });
  }

  /** Runs `fn` with the span active, so the HTTP client span of the request is its child. */
  within<T>(fn: () => T): T {
    return context.with(trace.setSpan(context.active(), this.span), fn);
  }

  response(r: { id?: string | null; model?: string | null }): void {
    if (r.id) this.span.setAttribute('gen_ai.response.id', r.id);
    if (r.model && r.model !== this.responseModel) {
      this.responseModel = r.model;
      this.span.setAttribute('gen_ai.response.model', r.model);
    }
  }

  recordUsage(usage: TokenUsage | null | undefined): void {
    if (!usage) return;
    this.usage = usage;
    this.span.setAttributes({ 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
  }

  firstChunk(): void {
    const seconds = (performance.now() - this.started) / 1000;
    agentMetrics.timeToFirstChunk.record(seconds, this.finalMetricAttributes());
    // Per call in the trace too (a metric has no trace); an event, since it is a moment in the call.
    this.span.addEvent('gen_ai.first_chunk', { 'gen_ai.client.operation.time_to_first_chunk': seconds });
  }

  succeeded(finishReasons: string[], output: LlmMessage | undefined): void {
    this.span.setAttribute('gen_ai.response.finish_reasons', finishReasons);
    if (this.capture && output) this.span.setAttributes(outputContentAttributes(output, finishReasons.at(-1) ?? null));
    this.end();
  }

  failed(err: unknown): void {
    const type = errorType(err);
    this.span.setAttribute('error.type', type);
    this.span.recordException(err as Error);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
    this.end(type);
  }

  /** Ends the span and records the metrics once; a call neither succeeded nor failed (dropped early) counts as ended. */
  end(error?: string): void {
    if (this.ended) return;
    this.ended = true;
    const attributes = { ...this.finalMetricAttributes(), ...(error ? { 'error.type': error } : {}) };
    agentMetrics.operationDuration.record((performance.now() - this.started) / 1000, attributes);
    this.tally?.add(this.model, this.usage);
    if (this.usage) {
      agentMetrics.tokenUsage.record(this.usage.prompt_tokens, { ...attributes, 'gen_ai.token.type': 'input' });
      agentMetrics.tokenUsage.record(this.usage.completion_tokens, { ...attributes, 'gen_ai.token.type': 'output' });
      const cost = costOf(this.model, this.usage);
      if (cost !== null) agentMetrics.cost.add(cost, attributes);
    }
    this.span.end();
  }

  private finalMetricAttributes(): Attributes {
    return { ...this.metricAttributes, ...(this.responseModel ? { 'gen_ai.response.model': this.responseModel } : {}) };
  }
}

/** One non-streaming call through the model's provider, in a CLIENT span with the GenAI attributes. */
export async function complete(pool: OpenAIClientPool, model: ResolvedModel, messages: LlmMessage[], opts: CallOptions): Promise<Completion> {
  const call = new ModelCallTelemetry(model, false, messages, opts);
  const scope = scopedSignal(opts.signal);
  try {
    const r = await call.within(() => providerFor(model).complete({ pool, model, messages, tools: opts.tools, removeThink: opts.removeThink, signal: scope.signal }));
    call.response({ id: r.responseId, model: r.responseModel });
    call.recordUsage(r.usage);
    const completion: Completion = { finishReason: r.finishReason, message: r.message };
    call.succeeded([r.finishReason ?? ''], completion.message);
    return completion;
  } catch (err) {
    call.failed(err);
    throw err;
  } finally {
    scope.release();
  }
}

/** What a streamed answer said, gathered only when content capture wants it on the span. */
class OutputGatherer {
  private text = '';
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();

  add(delta: StreamDelta): void {
    if (delta.content) this.text += delta.content;
    for (const t of delta.toolCalls ?? []) {
      const call = this.calls.get(t.index) ?? { id: '', name: '', arguments: '' };
      if (t.id) call.id = t.id;
      if (t.name) call.name += t.name;
      if (t.arguments) call.arguments += t.arguments;
      this.calls.set(t.index, call);
    }
  }

  message(): LlmMessage {
    const calls = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
    return { role: 'assistant', content: this.text || null, ...(calls.length ? { tool_calls: calls } : {}) };
  }
}

/**
 * One streamed chat completion as normalized deltas. The span lives until the stream ends (or the
 * consumer stops early), and records time to first chunk: what a streaming user waits for.
 */
export async function* streamChat(pool: OpenAIClientPool, model: ResolvedModel, messages: LlmMessage[], opts: CallOptions): AsyncGenerator<StreamDelta> {
  const call = new ModelCallTelemetry(model, true, messages, opts);
  const output = opts.telemetry?.captureContent ? new OutputGatherer() : undefined;
  let first = true;
  const finishReasons: string[] = [];
  const scope = scopedSignal(opts.signal);
  let items: AsyncIterator<ProviderStreamItem> | undefined;
  try {
    items = providerFor(model).stream({ pool, model, messages, tools: opts.tools, removeThink: opts.removeThink, signal: scope.signal })[Symbol.asyncIterator]();
    // Each step runs with the span active: the provider's HTTP request starts inside one, and its
    // client span must be this span's child.
    const it = items;
    for (let step = await call.within(() => it.next()); !step.done; step = await call.within(() => it.next())) {
      const item = step.value;
      if (item.kind === 'response') {
        call.response(item);
        continue;
      }
      if (item.kind === 'usage') {
        call.recordUsage(item.usage);
        continue;
      }
      const delta = item.delta;
      if (first) {
        first = false;
        call.firstChunk();
      }
      if (delta.finishReason) finishReasons.push(delta.finishReason);
      output?.add(delta);
      yield delta;
    }
    // The SDK ends an aborted stream quietly; without this a stopping runner would finish the run
    // with a truncated reply instead of handing it back to another replica.
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error('aborted');
    call.succeeded(finishReasons, output?.message());
  } catch (err) {
    call.failed(err);
    throw err;
  } finally {
    // A consumer that stopped reading early closes the provider's stream (and its connection).
    await items?.return?.().catch(() => undefined);
    scope.release();
    // A consumer that stopped reading early (return()) ends the call here.
    call.end();
  }
}
