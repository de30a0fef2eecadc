import type { LlmMessage, ModelProviderKind } from '@conveyor/contracts';
import type { OpenAIClientPool } from '../client-pool.js';
import type { ResolvedModel } from '../model.js';
import type { StreamDelta } from '../stream-accumulator.js';
import type { ToolDefinition } from '../llm-call.js';

/** Tokens of one call, in the loop's (OpenAI's) names: what the query log and the GenAI metrics count. */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** One model call as the loop asks for it, whatever the API. */
export interface ProviderCall {
  pool: OpenAIClientPool;
  model: ResolvedModel;
  /** The loop's history in OpenAI chat-completions shape; each provider maps it to its own. */
  messages: LlmMessage[];
  /** Omitted or empty: the request carries no tools. */
  tools?: ToolDefinition[];
  removeThink: boolean;
  signal?: AbortSignal;
}

export interface ProviderCompletion {
  message: LlmMessage;
  /** OpenAI's names (`stop`, `tool_calls`, `length`, `content_filter`), mapped from the provider's. */
  finishReason: string | null;
  usage?: TokenUsage;
  responseId?: string | null;
  responseModel?: string | null;
}

/** What a streamed call yields: the response's identity, its usage (when the API says it), and deltas. */
export type ProviderStreamItem =
  | { kind: 'response'; id?: string | null; model?: string | null }
  | { kind: 'usage'; usage: TokenUsage }
  | { kind: 'delta'; delta: StreamDelta };

/** One embedding request as the knowledge code asks for it, whatever the API. */
export interface EmbeddingCall {
  pool: OpenAIClientPool;
  model: ResolvedModel;
  texts: readonly string[];
  signal?: AbortSignal;
}

/** The provider's answer to an embedding request: one vector per text, in the texts' order. */
export interface ProviderEmbeddings {
  vectors: number[][];
  /** What the provider counted, when it says. */
  inputTokens?: number;
  responseModel?: string;
}

/**
 * One model API behind the agent loop: it maps the loop's OpenAI-shaped history, tools and the
 * pipeline's reasoning level onto its wire format and the answer back. The loop, the fallback chain
 * and the GenAI telemetry never look at which API it is.
 */
export interface ModelProvider {
  readonly kind: ModelProviderKind;
  /** `gen_ai.provider.name` of a call to this model. */
  genAiProviderName(model: ResolvedModel): string;
  complete(call: ProviderCall): Promise<ProviderCompletion>;
  stream(call: ProviderCall): AsyncIterable<ProviderStreamItem>;
  /** Absent where the API has no embeddings (Anthropic's). */
  embed?(call: EmbeddingCall): Promise<ProviderEmbeddings>;
}

/** An HTTP answer other than success from a provider reached without an SDK; `status` is what `error.type` records. */
export class ProviderHttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'ProviderHttpError';
  }
}

/** A 2xx answer that does not hold what the API promises (vectors missing, out of order); callers treat it as invalid, not as a failed call. */
export class ProviderAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderAnswerError';
  }
}

/** No answer (headers) within the model's timeout; `error.type` records `timeout`. */
export class ProviderTimeoutError extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'ProviderTimeoutError';
  }
}
