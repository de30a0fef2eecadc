import { meter } from '@conveyor/telemetry';

// Seconds, as the OpenTelemetry GenAI semantic conventions advise for gen_ai.client.operation.duration
// and gen_ai.server.time_to_first_token. The SDK's default buckets (0, 5, 10, ... 10000) are meant for
// milliseconds and would put every call in the first one.
export const LLM_CALL_DURATION_BUCKETS_SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
export const LLM_TIME_TO_FIRST_TOKEN_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** The agent's metrics (Prometheus names via the OTel exporter). */
export const agentMetrics = {
  tokens: meter.createCounter('conveyor_llm_tokens', { description: 'LLM tokens by direction', unit: '{token}' }),
  fallbacks: meter.createCounter('conveyor_llm_fallbacks', { description: 'Model calls that failed and moved on to the next model' }),
  callDuration: meter.createHistogram('conveyor_llm_call_duration', {
    description: 'LLM call latency, to the last token',
    unit: 's',
    advice: { explicitBucketBoundaries: LLM_CALL_DURATION_BUCKETS_SECONDS },
  }),
  timeToFirstToken: meter.createHistogram('conveyor_llm_time_to_first_token', {
    description: 'Streamed LLM calls: request to first delta',
    unit: 's',
    advice: { explicitBucketBoundaries: LLM_TIME_TO_FIRST_TOKEN_BUCKETS_SECONDS },
  }),
  toolRounds: meter.createHistogram('conveyor_agent_tool_rounds', {
    description: 'Tool rounds per agent run',
    advice: { explicitBucketBoundaries: [0, 1, 2, 4, 8, 16, 32, 64, 128, 129] },
  }),
  toolRoundCapHit: meter.createCounter('conveyor_agent_tool_round_cap', { description: 'Runs that reached the tool-round cap and were answered without tools' }),
  toolCalls: meter.createCounter('conveyor_agent_tool_calls', { description: 'Tool calls by outcome' }),
};
