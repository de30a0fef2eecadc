import type { ModelProviderKind, ReasoningLevel } from '@conveyor/contracts';

/** A model endpoint with its secret resolved, as the runner uses it. */
export interface ResolvedModel {
  /** Conveyor's id of the model configuration (LlmModel.id). */
  id: string;
  /** The API it speaks; absent means `openai` (any OpenAI-compatible endpoint). */
  provider?: ModelProviderKind;
  baseUrl: string;
  apiKey: string;
  /** The provider's model name sent in requests. */
  modelId: string;
  abilities: string[];
  extraArgs: Record<string, unknown>;
  timeoutMs: number;
  /** Prices per 1M tokens; absent when the model has none (its calls have no cost). */
  pricing?: { inputPerMTok: number; outputPerMTok: number };
  /** The pipeline's reasoning level for this model (`ai.local-agent.model.reasoning`); absent: `provider_default`. */
  reasoning?: ReasoningLevel;
}

export function providerKindOf(model: Pick<ResolvedModel, 'provider'>): ModelProviderKind {
  return model.provider ?? 'openai';
}
