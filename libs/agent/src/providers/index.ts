import type { ModelProviderKind } from '@conveyor/contracts';
import { providerKindOf, type ResolvedModel } from '../model.js';
import { anthropicProvider } from './anthropic.js';
import { geminiProvider } from './gemini.js';
import { ollamaProvider } from './ollama.js';
import { openAiProvider } from './openai.js';
import type { ModelProvider } from './types.js';

export * from './types.js';
export * from './reasoning.js';
export { anthropicMessages, anthropicRequest, anthropicTools } from './anthropic.js';
export { geminiContents, geminiRequest } from './gemini.js';
export { ollamaMessages, ollamaRequest } from './ollama.js';
export { openAiRequest } from './openai.js';

/** Every API a model may be reached through, by the kind its configuration names. */
export const MODEL_PROVIDERS: Readonly<Record<ModelProviderKind, ModelProvider>> = {
  openai: openAiProvider,
  anthropic: anthropicProvider,
  gemini: geminiProvider,
  ollama: ollamaProvider,
};

export function providerFor(model: Pick<ResolvedModel, 'provider'>): ModelProvider {
  return MODEL_PROVIDERS[providerKindOf(model)];
}

/** `gen_ai.provider.name` of a call to the model. */
export function genAiProviderNameOf(model: ResolvedModel): string {
  return providerFor(model).genAiProviderName(model);
}
