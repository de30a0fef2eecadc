import { SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { tracer } from '@conveyor/telemetry';
import type { ResolvedModel } from '../model.js';
import { agentMetrics } from '../metrics.js';
import { contextMetricAttributes, contextSpanAttributes, errorType, serverAttributes, type GenAiCallContext } from '../genai-semconv.js';
import { genAiProviderNameOf } from '../providers/index.js';

/**
 * `embeddings` is the GenAI conventions' operation; rerank has none there, and the conventions allow
 * a custom value for an operation they do not list.
 */
export type KnowledgeModelOperation = 'embeddings' | 'rerank';

export interface KnowledgeModelCall {
  readonly span: Span;
  /** The tokens the provider counted for the request (`gen_ai.usage.input_tokens`); unknown when it did not say. */
  inputTokens(tokens: number | undefined): void;
  responseModel(model: string | undefined): void;
}

/**
 * One embedding or rerank request as the GenAI conventions shape a model call: a CLIENT span
 * `{operation} {model}` (active, so the HTTP client span is its child) with the provider, server,
 * model and usage, and the same gen_ai.client.operation.duration and gen_ai.client.token.usage
 * (input tokens only: these calls produce none) as chat calls, with bot and pipeline. Never the texts.
 */
export async function inKnowledgeModelCall<T>(
  operation: KnowledgeModelOperation,
  model: ResolvedModel,
  telemetry: GenAiCallContext | undefined,
  attributes: Attributes,
  fn: (call: KnowledgeModelCall) => Promise<T>,
): Promise<T> {
  const common: Attributes = {
    'gen_ai.operation.name': operation,
    // As the model's chat spans name it: from its configured API kind, then its endpoint.
    'gen_ai.provider.name': genAiProviderNameOf(model),
    'gen_ai.request.model': model.modelId,
    ...serverAttributes(model.baseUrl),
  };
  const metricAttributes: Attributes = { ...common, 'conveyor.model.id': model.id, ...contextMetricAttributes(telemetry) };
  const started = performance.now();
  let tokens: number | undefined;
  return tracer.startActiveSpan(
    `${operation} ${model.modelId}`,
    { kind: SpanKind.CLIENT, attributes: { ...common, ...contextSpanAttributes(telemetry), 'conveyor.model.id': model.id, ...attributes } },
    async (span) => {
      let failure: string | undefined;
      try {
        return await fn({
          span,
          inputTokens(n) {
            if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return;
            tokens = n;
            span.setAttribute('gen_ai.usage.input_tokens', n);
          },
          responseModel(m) {
            if (m) {
              span.setAttribute('gen_ai.response.model', m);
              metricAttributes['gen_ai.response.model'] = m;
            }
          },
        });
      } catch (err) {
        // A KnowledgeError wraps the client's error, whose status is the provider's answer.
        failure = errorType((err as { cause?: unknown }).cause ?? err);
        span.setAttribute('error.type', failure);
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        const recorded = failure ? { ...metricAttributes, 'error.type': failure } : metricAttributes;
        agentMetrics.operationDuration.record((performance.now() - started) / 1000, recorded);
        if (tokens !== undefined) agentMetrics.tokenUsage.record(tokens, { ...recorded, 'gen_ai.token.type': 'input' });
        span.end();
      }
    },
  );
}
