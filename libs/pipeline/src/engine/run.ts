import { RetryableError } from '@conveyor/contracts';
import { checkOutput, executeFrom } from './execute.js';
import type { PipelineDeps } from './ports.js';
import type { PipelineQuery } from './query.js';
import { interrupt } from './result.js';
import { DeliveryError } from '../stages/send-response-back.js';
import type { Stage } from './stage.js';

/** The user notice for a failure under `output.misc.exception-handling`, as LangBot's chat handler picks it. */
export function failureNotice(query: PipelineQuery, error: unknown): string | undefined {
  const misc = query.config.output.misc;
  if (misc['exception-handling'] === 'show-error') return error instanceof Error ? error.message : String(error);
  if (misc['exception-handling'] === 'show-hint') return misc['failure-hint'];
  return undefined;
}

/**
 * Runs the stages from `from`, turning an exception from any stage into the configured failure notice
 * and a failed query. LangBot sends no notice for exceptions outside MessageProcessor; here every
 * failure gets one, so a reply always ends with a final part. RetryableError passes through: it asks
 * the bus to deliver the message again later (rate-limit `wait`, a busy session).
 */
export async function runStages(stages: readonly Stage[], from: number, query: PipelineQuery, deps: PipelineDeps): Promise<'ok' | 'failed'> {
  try {
    await executeFrom(stages, from, query, deps);
    return query.variables._monitoring_has_error ? 'failed' : 'ok';
  } catch (err) {
    if (err instanceof RetryableError || deps.isOutage?.(err)) throw err;
    const e = err instanceof Error ? err : new Error(String(err));
    const stage = query.currentStage;
    deps.logger.error({ queryId: query.queryId, stage, err: { message: e.message, stack: e.stack } }, 'pipeline stage failed');
    // A reply the platform refused cannot be followed by a notice through the same platform.
    const userNotice = err instanceof DeliveryError ? undefined : failureNotice(query, e);
    await checkOutput(query, interrupt({ userNotice, errorNotice: `${stage}: ${e.message}`, debugNotice: e.stack }), deps);
    return 'failed';
  }
}
