import { trace, type Span } from '@opentelemetry/api';
import { currentTraceId, inStage } from '@conveyor/telemetry';
import type { MessageChain } from '@conveyor/contracts';
import type { PipelineDeps } from './ports.js';
import { isGroup, type PipelineQuery } from './query.js';
import type { StageResult } from './result.js';
import { isAsyncIterable, type Stage } from './stage.js';

const tracer = trace.getTracer('@conveyor/pipeline');

/**
 * LangBot's `_execute_from_stage`. A single result continues to the next stage or ends the
 * branch; a generator runs every downstream stage to completion for each item before it is asked for
 * the next, an INTERRUPT from downstream ends only that item's branch, and an INTERRUPT the generator
 * yields itself stops it. Exceptions propagate to the caller (runPipeline applies exception-handling).
 * `interrupted` when a stage's single result stopped the run; `through` when the run got past the last
 * stage, or a generator took it over (its items' branches end on their own).
 */
export async function executeFrom(stages: readonly Stage[], from: number, query: PipelineQuery, deps: PipelineDeps): Promise<'through' | 'interrupted'> {
  for (let i = from; i < stages.length; i++) {
    const stage = stages[i];
    query.currentStage = stage.name;
    const output = await inStage(
      stage.name,
      query.pipelineId,
      async (span) => {
        const out = stage.process(query);
        if (isAsyncIterable(out)) {
          span.setAttribute('conveyor.stage.generator', true);
          return out;
        }
        const result = await out;
        recordResult(span, stage.name, result, deps);
        return result;
      },
      // A generator's items are spans of their own (fanOut); starting it always continues.
      { outcome: (out) => ({ result: isAsyncIterable(out) || out.type !== 'interrupt' ? 'CONTINUE' : 'INTERRUPT' }) },
    );
    if (isAsyncIterable(output)) {
      await fanOut(stages, i, output, query, deps);
      return 'through';
    }
    await checkOutput(query, output, deps);
    if (output.type === 'interrupt') return 'interrupted';
  }
  return 'through';
}

async function fanOut(stages: readonly Stage[], i: number, items: AsyncIterable<StageResult>, query: PipelineQuery, deps: PipelineDeps): Promise<void> {
  const name = stages[i].name;
  const iterator = items[Symbol.asyncIterator]();
  try {
    for (;;) {
      // One span per yielded item, so each item's downstream spans nest under the item that caused them.
      const step = await tracer.startActiveSpan(`stage ${name}`, { attributes: { 'conveyor.pipeline.id': query.pipelineId, 'conveyor.stage.name': name, 'conveyor.stage.generator': true } }, async (span) => {
        try {
          query.currentStage = name;
          const next = await iterator.next();
          if (next.done) {
            // The generator ran out: nothing was interrupted.
            span.setAttributes({ 'conveyor.stage.result': 'CONTINUE', 'conveyor.stage.exhausted': true });
            return { done: true as const };
          }
          recordResult(span, name, next.value, deps);
          await checkOutput(query, next.value, deps);
          if (next.value.type === 'interrupt') return { done: true as const };
          await executeFrom(stages, i + 1, query, deps);
          return { done: false as const };
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: 2, message: (err as Error).message });
          throw err;
        } finally {
          span.end();
        }
      });
      if (step.done) return;
    }
  } finally {
    // LangBot leaves an abandoned generator to the garbage collector; closing it here runs its
    // cleanup (runner aclose, telemetry) at once.
    await iterator.return?.();
  }
}

function recordResult(span: Span, stage: string, result: StageResult, deps: PipelineDeps): void {
  const type = result.type === 'interrupt' ? 'INTERRUPT' : 'CONTINUE';
  span.setAttribute('conveyor.stage.result', type);
  deps.onStageResult?.(stage, result.type);
}

/** LangBot's `_check_output`: every result's notices go out before its INTERRUPT is honored. */
export async function checkOutput(query: PipelineQuery, result: StageResult, deps: PipelineDeps): Promise<void> {
  const log = { queryId: query.queryId, stage: query.currentStage, traceId: currentTraceId() };
  if (result.userNotice && result.userNotice.length > 0) {
    const chain: MessageChain = typeof result.userNotice === 'string' ? [{ type: 'Plain', text: result.userNotice }] : [...result.userNotice];
    if (query.config.output.misc['at-sender'] && isGroup(query)) chain.unshift({ type: 'At', target: query.route.senderId, display: '' });
    await deps.notices.userNotice(query, chain);
  }
  if (result.debugNotice) deps.logger.debug({ ...log, notice: result.debugNotice }, 'stage debug notice');
  if (result.consoleNotice) deps.logger.info({ ...log, notice: result.consoleNotice }, 'stage notice');
  if (result.errorNotice) {
    deps.logger.error({ ...log, notice: result.errorNotice }, 'stage error notice');
    query.variables._monitoring_has_error = true;
    await deps.notices.markFailed(query, result.errorNotice);
  }
}
