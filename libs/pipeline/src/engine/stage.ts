import type { PipelineSettings } from '../config/schema.js';
import type { PipelineDeps } from './ports.js';
import type { PipelineQuery } from './query.js';
import type { StageResult } from './result.js';

/** A stage returns one result or an async sequence of them (LangBot's generator stages). */
export type StageOutput = StageResult | Promise<StageResult> | AsyncIterable<StageResult>;

export interface Stage {
  readonly name: string;
  process(query: PipelineQuery): StageOutput;
}

/** Builds a stage instance for one loaded pipeline (LangBot creates stages per pipeline). */
export type StageFactory = (init: { name: string; config: PipelineSettings; deps: PipelineDeps }) => Stage;

export function isAsyncIterable(v: unknown): v is AsyncIterable<StageResult> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
}
