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

/**
 * Names already worked out, per model: an OpenAI-compatible model's comes from parsing its base URL,
 * asked two or three times per call, and the configuration read model hands out the same resolved
 * model until its configuration changes (a changed one is a new object, whose name is worked out anew).
 */
const providerNames = new WeakMap<ResolvedModel, string>();

/** `gen_ai.provider.name` of a call to the model. */
export function genAiProviderNameOf(model: ResolvedModel): string {
  let name = providerNames.get(model);
  if (name === undefined) {
    name = providerFor(model).genAiProviderName(model);
    providerNames.set(model, name);
  }
  return name;
}
