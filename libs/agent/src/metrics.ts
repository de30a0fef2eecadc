import { meter, METRIC_NAMES } from '@conveyor/telemetry';

// Seconds, the buckets the OpenTelemetry GenAI semantic conventions give for
// gen_ai.client.operation.duration and gen_ai.client.operation.time_to_first_chunk. The SDK's default
// buckets (0, 5, 10, ... 10000) are meant for milliseconds and would put every call in the first one.
export const LLM_CALL_DURATION_BUCKETS_SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** The conventions' buckets for gen_ai.client.token.usage. */
export const TOKEN_USAGE_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/** The agent's metrics (names in METRIC_NAMES; Prometheus names via the OTel exporter). */
export const agentMetrics = {
  /** Per call and token type (`gen_ai.token.type` input or output); its `_sum` is the token total. */
  tokenUsage: meter.createHistogram(METRIC_NAMES.genAiTokenUsage, {
    description: 'Number of input and output tokens used',
    unit: '{token}',
    advice: { explicitBucketBoundaries: TOKEN_USAGE_BUCKETS },
  }),
  operationDuration: meter.createHistogram(METRIC_NAMES.genAiOperationDuration, {
    description: 'GenAI operation duration, to the last token',
    unit: 's',
    advice: { explicitBucketBoundaries: LLM_CALL_DURATION_BUCKETS_SECONDS },
  }),
  /** Streamed calls only, as the conventions say: request to the first chunk, what a streaming user waits for. */
  timeToFirstChunk: meter.createHistogram(METRIC_NAMES.genAiTimeToFirstChunk, {
    description: 'Time to receive the first chunk of a streamed response',
    unit: 's',
    advice: { explicitBucketBoundaries: LLM_CALL_DURATION_BUCKETS_SECONDS },
  }),
  cost: meter.createCounter(METRIC_NAMES.llmCost, { description: 'What model calls cost at the prices set on their model, in the prices\' currency' }),
  fallbacks: meter.createCounter(METRIC_NAMES.llmFallbacks, { description: 'Model calls that failed and moved on to the next model' }),
  toolRounds: meter.createHistogram('conveyor_agent_tool_rounds', {
    description: 'Tool rounds per agent run',
    advice: { explicitBucketBoundaries: [0, 1, 2, 4, 8, 16, 32, 64, 128, 129] },
  }),
  toolRoundCapHit: meter.createCounter('conveyor_agent_tool_round_cap', { description: 'Runs that reached the tool-round cap and were answered without tools' }),
  toolCalls: meter.createCounter('conveyor_agent_tool_calls', { description: 'Tool calls by outcome' }),
};
