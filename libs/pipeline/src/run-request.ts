import type { LlmMessage, ModelSelection, QueryEnvelope, RunRequest } from '@conveyor/contracts';
import { plainText } from '@conveyor/contracts';

/** The parts of LangBot's pipeline config the run request needs, after defaults were applied. */
export interface RunRequestConfig {
  ai: {
    'local-agent': {
      model: ModelSelection | string;
      prompt: Array<{ role: string; content: string }>;
    };
  };
  output: {
    misc: { 'exception-handling': 'show-error' | 'show-hint' | 'hide'; 'failure-hint': string };
  };
}

/** LangBot accepts a legacy plain model id string as well as `{primary, fallbacks}`. */
export function modelSelection(model: ModelSelection | string): ModelSelection {
  return typeof model === 'string' ? { primary: model, fallbacks: [] } : { primary: model.primary, fallbacks: model.fallbacks ?? [] };
}

/** The conversation preset from `ai.local-agent.prompt`, as system/user/assistant messages. */
export function promptMessages(config: RunRequestConfig): LlmMessage[] {
  return config.ai['local-agent'].prompt
    .filter((m) => ['system', 'user', 'assistant'].includes(m.role))
    .map((m) => ({ role: m.role as 'system' | 'user' | 'assistant', content: m.content }));
}

export interface BuildRunRequestInput {
  query: QueryEnvelope;
  pipelineId: string;
  conversationId: string;
  config: RunRequestConfig;
  history: LlmMessage[];
  stream: boolean;
}

/** Preset, history and the user's turn, in the order the model sees them. */
export function buildRunRequest({ query, pipelineId, conversationId, config, history, stream }: BuildRunRequestInput): RunRequest {
  const misc = config.output.misc;
  return {
    v: 1,
    queryId: query.queryId,
    pipelineId,
    route: query.route,
    conversationId,
    model: modelSelection(config.ai['local-agent'].model),
    stream,
    messages: [...promptMessages(config), ...history, { role: 'user', content: plainText(query.messageChain) }],
    exceptionHandling: misc['exception-handling'],
    failureHint: misc['failure-hint'],
  };
}
