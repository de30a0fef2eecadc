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
}
