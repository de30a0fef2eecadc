import { meter } from '@conveyor/telemetry';

/** The agent's metrics (Prometheus names via the OTel exporter). */
export const agentMetrics = {
  tokens: meter.createCounter('conveyor_llm_tokens', { description: 'LLM tokens by direction', unit: '{token}' }),
  fallbacks: meter.createCounter('conveyor_llm_fallbacks', { description: 'Model calls that failed and moved on to the next model' }),
  callDuration: meter.createHistogram('conveyor_llm_call_duration', { description: 'LLM call latency, to the last token', unit: 's' }),
  timeToFirstToken: meter.createHistogram('conveyor_llm_time_to_first_token', { description: 'Streamed LLM calls: request to first delta', unit: 's' }),
  toolRounds: meter.createHistogram('conveyor_agent_tool_rounds', {
    description: 'Tool rounds per agent run',
    advice: { explicitBucketBoundaries: [0, 1, 2, 4, 8, 16, 32, 64, 128, 129] },
  }),
  toolRoundCapHit: meter.createCounter('conveyor_agent_tool_round_cap', { description: 'Runs that reached the tool-round cap and were answered without tools' }),
  toolCalls: meter.createCounter('conveyor_agent_tool_calls', { description: 'Tool calls by outcome' }),
};
