import type { ResolvedModel } from './model.js';

/**
 * A run's model calls and token usage, summed as the calls end, for the query log: one tally per run,
 * read once when the run ends (the log's cost column is what these tokens cost at the model's prices).
 */
export class UsageTally {
  calls = 0;
  inputTokens = 0;
  outputTokens = 0;
  /** What the calls cost; null while no call was made with a priced model. */
  cost: number | null = null;
  /** The model of the last call (the one that answered, after any fallback). */
  model: string | null = null;

  add(model: ResolvedModel, usage: { prompt_tokens: number; completion_tokens: number } | undefined): void {
    this.calls++;
    this.model = model.id;
    if (!usage) return;
    this.inputTokens += usage.prompt_tokens;
    this.outputTokens += usage.completion_tokens;
    const cost = costOf(model, usage);
    if (cost !== null) this.cost = (this.cost ?? 0) + cost;
  }
}

/** What a call's tokens cost at the model's prices (per 1M tokens); null for a model with none set. */
export function costOf(model: Pick<ResolvedModel, 'pricing'>, usage: { prompt_tokens: number; completion_tokens: number }): number | null {
  const price = model.pricing;
  return price ? (usage.prompt_tokens * price.inputPerMTok + usage.completion_tokens * price.outputPerMTok) / 1_000_000 : null;
}
