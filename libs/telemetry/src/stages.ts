import { SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { tracer } from './spans.js';
import { conveyorMetrics } from './metrics.js';

/** Span attribute names of a pipeline stage span. */
export const STAGE_ATTR = {
  pipelineId: 'conveyor.pipeline.id',
  stage: 'conveyor.stage.name',
  result: 'conveyor.stage.result',
  notices: 'conveyor.stage.notices',
} as const;

export type StageResult = 'CONTINUE' | 'INTERRUPT' | (string & {});

export interface StageOutcome {
  /** CONTINUE or INTERRUPT (LangBot's ResultType). */
  result: StageResult;
  /** User-visible notices the stage produced (counted on the span, texts not recorded). */
  notices?: number;
}

export interface InStageOptions<T> {
  attributes?: Attributes;
  /** Reads the outcome from the stage's value; default: its `result` and `notices` fields when present. */
  outcome?: (value: T) => StageOutcome;
}

function defaultOutcome(value: unknown): StageOutcome | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { result?: unknown; notices?: unknown };
  if (typeof v.result !== 'string') return undefined;
  const notices = Array.isArray(v.notices) ? v.notices.length : typeof v.notices === 'number' ? v.notices : undefined;
  return { result: v.result, ...(notices !== undefined ? { notices } : {}) };
}

/**
 * Runs one pipeline stage in a span named `stage <name>` (a child of the active CONSUMER span) and
 * records its latency in conveyor_stage_duration_seconds{pipeline, stage, result}. A stage that throws
 * is recorded with result ERROR.
 */
export async function inStage<T>(stage: string, pipelineId: string, fn: (span: Span) => Promise<T>, options: InStageOptions<T> = {}): Promise<T> {
  const attributes = options.attributes ?? {};
  return tracer.startActiveSpan(
    `stage ${stage}`,
    { kind: SpanKind.INTERNAL, attributes: { ...attributes, [STAGE_ATTR.pipelineId]: pipelineId, [STAGE_ATTR.stage]: stage } },
    async (span) => {
      const started = performance.now();
      let result: string = 'ERROR';
      try {
        const value = await fn(span);
        const outcome = options.outcome ? options.outcome(value) : defaultOutcome(value);
        result = outcome?.result ?? 'CONTINUE';
        span.setAttribute(STAGE_ATTR.result, result);
        if (outcome?.notices !== undefined) span.setAttribute(STAGE_ATTR.notices, outcome.notices);
        return value;
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        span.setAttribute(STAGE_ATTR.result, 'ERROR');
        throw err;
      } finally {
        span.end();
        conveyorMetrics.stageDuration().record((performance.now() - started) / 1000, { pipeline: pipelineId, stage, result });
      }
    },
  );
}
