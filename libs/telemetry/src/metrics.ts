import { metrics, type Attributes, type Counter, type Histogram } from '@opentelemetry/api';

/** One meter for the whole system; metric names are part of the operations contract (docs/OBSERVABILITY.md). */
export const meter = metrics.getMeter('@conveyor');

/**
 * Metric names owned by the services (the bus's own are BUS_METRICS in @conveyor/bus). Prometheus
 * shows counters with a `_total` suffix and histograms as `_bucket`/`_sum`/`_count`.
 */
export const METRIC_NAMES = {
  /** ingress: inbound messages by bot and outcome (accepted, duplicate). */
  ingressMessages: 'conveyor_ingress_messages',
  /** orchestrator/dispatcher: one pipeline stage's latency, labels pipeline, stage, result. */
  stageDuration: 'conveyor_stage_duration_seconds',
  /** orchestrator: rate-limit decisions, labels decision (allow, drop, wait), conveyor.pipeline.id. */
  rateLimitDecisions: 'conveyor_rate_limit_decisions',
  /** orchestrator: messages merged into another query by message aggregation, label conveyor.pipeline.id. */
  aggregatedMessages: 'conveyor_aggregated_messages',
  /**
   * runner: the OpenTelemetry GenAI client metrics, by their semantic-convention names (Prometheus:
   * dots as underscores, `gen_ai_client_token_usage_bucket`). Attributes gen_ai.operation.name,
   * gen_ai.provider.name, gen_ai.request.model, gen_ai.response.model, server.address, server.port,
   * error.type (failed calls), conveyor.model.id, conveyor.bot.id, conveyor.pipeline.id.
   */
  /** Tokens per call (histogram), plus gen_ai.token.type (input, output); its `_sum` is the token total. */
  genAiTokenUsage: 'gen_ai.client.token.usage',
  /** Whole model call latency, to the last token (seconds). */
  genAiOperationDuration: 'gen_ai.client.operation.duration',
  /** Streamed calls: request to the first chunk (seconds). */
  genAiTimeToFirstChunk: 'gen_ai.client.operation.time_to_first_chunk',
  /** runner: model calls that failed over to the next model. */
  llmFallbacks: 'conveyor_llm_fallbacks',
  /**
   * runner: what chat calls cost at the prices set on their model (per 1M input and output tokens, in
   * whatever currency the prices are in); calls of unpriced models add nothing. Attributes as on the
   * GenAI metrics (bot, pipeline, model).
   */
  llmCost: 'conveyor_llm_cost',
  /** runner: tool calls, label outcome. */
  toolCalls: 'conveyor_agent_tool_calls',
  /** dispatcher: replies the platform did not accept after all retries, label adapter. */
  sendFailures: 'conveyor_dispatch_send_failures',
  /** dispatcher: reply parts handed to a platform / not taken after all retries. */
  partsSent: 'conveyor_dispatch_parts_sent',
  partsFailed: 'conveyor_dispatch_parts_failed',
  /** orchestrator/runner: chats that started waiting for a person, labels via (keyword, tool) and webhook (sent, failed, none). */
  humanRequests: 'conveyor_human_requests',
  /** every service: config.changed events received, label kind. */
  configChanges: 'conveyor_config_changes_received',
  /** every service: every configuration cache dropped at once, label reason (reconnect, subscription error, unreadable event). */
  configCacheResets: 'conveyor_config_cache_resets',
} as const;

/** Seconds, from a fast stage (ms) to a long agent run (minutes). */
export const LATENCY_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const cache = new Map<string, Counter | Histogram>();

function cached<T extends Counter | Histogram>(name: string, make: () => T): T {
  let hit = cache.get(name) as T | undefined;
  if (!hit) cache.set(name, (hit = make()));
  return hit;
}

/** A seconds histogram with buckets fit for latencies; one instrument per name per process. */
export function latencyHistogram(name: string, description: string): Histogram {
  return cached(name, () => meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: LATENCY_BUCKETS_SECONDS } }));
}

export function counter(name: string, description: string): Counter {
  return cached(name, () => meter.createCounter(name, { description }));
}

/** The instruments of the metric names above, created on first use. */
export const conveyorMetrics = {
  stageDuration: () => latencyHistogram(METRIC_NAMES.stageDuration, 'Latency of one pipeline stage'),
  rateLimitDecisions: () => counter(METRIC_NAMES.rateLimitDecisions, 'Rate-limit decisions by scope and decision'),
  toolCalls: () => counter(METRIC_NAMES.toolCalls, 'Tool calls by outcome'),
  humanRequests: () => counter(METRIC_NAMES.humanRequests, 'Chats that started waiting for a person, by how they asked and whether the webhook took the notice'),
  aggregatedMessages: () => counter(METRIC_NAMES.aggregatedMessages, 'Messages merged into another query by message aggregation'),
};

/** Records a rate-limit decision (`decision`: allow, drop or wait, LangBot's outcomes). */
export function recordRateLimitDecision(decision: 'allow' | 'drop' | 'wait' | (string & {}), attributes: Attributes = {}): void {
  conveyorMetrics.rateLimitDecisions().add(1, { ...attributes, decision });
}
