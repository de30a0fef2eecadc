import type { LlmMessage } from '@conveyor/contracts';
import type { OpenAIClientPool } from './client-pool.js';
import { complete, streamChat, type CallOptions, type Completion, type ToolDefinition } from './llm-call.js';
import { agentMetrics } from './metrics.js';
import type { ResolvedModel } from './model.js';
import type { StreamDelta } from './stream-accumulator.js';

export class NoModelConfiguredError extends Error {
  constructor() {
    super('No LLM model configured for local-agent runner');
  }
}

export class AllModelsFailedError extends Error {
  constructor(readonly causes: Error[]) {
    super(`all ${causes.length} models failed: ${causes.map((c) => c.message).join('; ')}`);
  }
}

export type OnFallback = (failed: ResolvedModel, err: Error) => void;

/** Tools go only to models with the func_call ability, as in LangBot: others would refuse the request or ignore them. */
export function toolsFor(model: ResolvedModel, tools: ToolDefinition[] | undefined): ToolDefinition[] | undefined {
  return model.abilities.includes('func_call') && tools?.length ? tools : undefined;
}

interface FallbackOptions extends Omit<CallOptions, 'tools'> {
  tools?: ToolDefinition[];
  onFallback?: OnFallback;
}

function failed(model: ResolvedModel, err: Error, causes: Error[], opts: FallbackOptions): void {
  causes.push(err);
  agentMetrics.fallbacks.add(1, { model: model.id });
  opts.onFallback?.(model, err);
}

/** Non-streaming: primary then each fallback in order, moving on at any error (LangBot `_invoke_with_fallback`). */
export async function completeWithFallback(
  pool: OpenAIClientPool,
  models: ResolvedModel[],
  messages: LlmMessage[],
  opts: FallbackOptions,
): Promise<Completion & { model: ResolvedModel }> {
  if (models.length === 0) throw new NoModelConfiguredError();
  const causes: Error[] = [];
  for (const model of models) {
    try {
      return { model, ...(await complete(pool, model, messages, { ...opts, tools: toolsFor(model, opts.tools) })) };
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      failed(model, err as Error, causes, opts);
    }
  }
  throw new AllModelsFailedError(causes);
}

/**
 * Streaming: a model counts as answering once its first delta arrived (the peek); until then any
 * error moves on to the next model. After it, errors belong to that model: the user may already
 * see its text, so switching models would splice two answers together.
 */
export async function streamWithFallback(
  pool: OpenAIClientPool,
  models: ResolvedModel[],
  messages: LlmMessage[],
  opts: FallbackOptions,
): Promise<{ model: ResolvedModel; deltas: AsyncIterable<StreamDelta> }> {
  if (models.length === 0) throw new NoModelConfiguredError();
  const causes: Error[] = [];
  for (const model of models) {
    const it = streamChat(pool, model, messages, { ...opts, tools: toolsFor(model, opts.tools) });
    let first: IteratorResult<StreamDelta>;
    try {
      first = await it.next();
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      failed(model, err as Error, causes, opts);
      continue;
    }
    return { model, deltas: prepend(first, it) };
  }
  throw new AllModelsFailedError(causes);
}

async function* prepend(first: IteratorResult<StreamDelta>, rest: AsyncGenerator<StreamDelta>): AsyncGenerator<StreamDelta> {
  if (first.done) return; // An empty stream counts as an (empty) answer, as in LangBot.
  yield first.value;
  yield* rest;
}
