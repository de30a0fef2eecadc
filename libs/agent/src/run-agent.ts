import type { LlmMessage, RunRequest } from '@conveyor/contracts';
import type { OpenAIClientPool } from './client-pool.js';
import { completeWithFallback, NoModelConfiguredError } from './complete.js';
import type { ResolvedModel } from './model.js';

export interface AgentLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface AgentDeps {
  pool: OpenAIClientPool;
  logger: AgentLogger;
  signal?: AbortSignal;
}

export type AgentOutcome =
  | { ok: true; reply: LlmMessage; model: ResolvedModel }
  | { ok: false; error: string; userText: string | null };

/** What the user sees for a failure, per `output.misc.exception-handling`. */
export function userFacingError(run: Pick<RunRequest, 'exceptionHandling' | 'failureHint'>, error: string): string | null {
  switch (run.exceptionHandling) {
    case 'show-error':
      return error;
    case 'hide':
      return null;
    default:
      return run.failureHint;
  }
}

/**
 * The local agent, non-streaming and without tools: one completion through the fallback chain.
 * (Streaming, tools and the 128-round loop are issue 4.)
 */
export async function runLocalAgent(run: RunRequest, models: ResolvedModel[], deps: AgentDeps): Promise<AgentOutcome> {
  try {
    const result = await completeWithFallback(deps.pool, models, run.messages, deps.signal, (model, err) =>
      deps.logger.warn({ model: model.id, err: err.message }, 'model call failed; trying the next model'),
    );
    return { ok: true, reply: result.message, model: result.model };
  } catch (err) {
    if (deps.signal?.aborted) throw err;
    const message = err instanceof NoModelConfiguredError ? err.message : `model call failed: ${(err as Error).message}`;
    deps.logger.error({ err: message, queryId: run.queryId }, message);
    return { ok: false, error: message, userText: userFacingError(run, message) };
  }
}
