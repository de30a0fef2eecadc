import type { ReasoningLevel } from '@conveyor/contracts';

// LangBot's reasoning levels onto each API's parameter. `provider_default` (or no level) sends
// nothing, so the model's own extra arguments (or the API's default) decide; any other level replaces
// what the model's extra arguments say for that parameter.

/** OpenAI's `reasoning_effort` (`none` turns reasoning off on the models that allow it). */
export function openAiReasoningEffort(level: ReasoningLevel | undefined): string | undefined {
  switch (level) {
    case undefined:
    case 'provider_default':
      return undefined;
    case 'disabled':
      return 'none';
    case 'enabled':
      return 'medium';
    case 'max':
      return 'xhigh';
    default:
      return level;
  }
}

/** Thinking tokens per level, for the APIs that take a budget (Anthropic, Gemini 2.5). */
const BUDGET: Record<'minimal' | 'low' | 'enabled' | 'medium' | 'high' | 'xhigh' | 'max', number> = {
  minimal: 1024,
  low: 2048,
  enabled: 4096,
  medium: 4096,
  high: 8192,
  xhigh: 16384,
  max: 32768,
};

export type AnthropicThinking = { type: 'enabled'; budget_tokens: number } | { type: 'disabled' };

/** Anthropic's `thinking` (a budget of at least 1,024 tokens, below `max_tokens`). */
export function anthropicThinking(level: ReasoningLevel | undefined): AnthropicThinking | undefined {
  if (level === undefined || level === 'provider_default') return undefined;
  if (level === 'disabled') return { type: 'disabled' };
  return { type: 'enabled', budget_tokens: BUDGET[level] };
}

export interface GeminiThinkingConfig {
  thinkingBudget?: number;
  includeThoughts?: boolean;
}

/**
 * Gemini's `generationConfig.thinkingConfig`: a budget of 0 turns thinking off, -1 lets the model
 * choose; thoughts are included so they stream as reasoning like any other provider's.
 */
export function geminiThinkingConfig(level: ReasoningLevel | undefined): GeminiThinkingConfig | undefined {
  if (level === undefined || level === 'provider_default') return undefined;
  if (level === 'disabled') return { thinkingBudget: 0 };
  if (level === 'enabled') return { thinkingBudget: -1, includeThoughts: true };
  return { thinkingBudget: BUDGET[level], includeThoughts: true };
}

/** Ollama's `think`: a boolean, or a depth for the models that take one (gpt-oss: low, medium, high). */
export function ollamaThink(level: ReasoningLevel | undefined): boolean | 'low' | 'medium' | 'high' | undefined {
  switch (level) {
    case undefined:
    case 'provider_default':
      return undefined;
    case 'disabled':
      return false;
    case 'enabled':
      return true;
    case 'minimal':
    case 'low':
      return 'low';
    case 'medium':
      return 'medium';
    default:
      return 'high';
  }
}
