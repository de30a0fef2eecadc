/** An OpenAI-compatible model endpoint with its secret resolved, as the runner uses it. */
export interface ResolvedModel {
  /** Conveyor's id of the model configuration (LlmModel.id). */
  id: string;
  baseUrl: string;
  apiKey: string;
  /** The provider's model name sent in requests. */
  modelId: string;
  abilities: string[];
  extraArgs: Record<string, unknown>;
  timeoutMs: number;
  /** Prices per 1M tokens; absent when the model has none (its calls have no cost). */
  pricing?: { inputPerMTok: number; outputPerMTok: number };
}
