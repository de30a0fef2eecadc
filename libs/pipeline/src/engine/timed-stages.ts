import { isAsyncIterable, type Stage, type StageOutput } from './stage.js';
import type { StageResult } from './result.js';

/** How long one stage took: `at` its start (Unix milliseconds), `ms` the time spent in the stage itself. */
export interface StageTime {
  stage: string;
  at: number;
  ms: number;
}

/**
 * The stages, each reporting how long it took once it is done. A generator stage counts only the
 * time spent producing its results, not the time the stages after it spent on each one.
 */
export function timedStages(stages: readonly Stage[], record: (time: StageTime) => void): Stage[] {
  return stages.map((stage) => ({
    name: stage.name,
    process(query): StageOutput {
      const at = Date.now();
      const started = performance.now();
      const done = (ms: number) => record({ stage: stage.name, at, ms: Math.round(ms) });
      const output = stage.process(query);
      if (isAsyncIterable(output)) return timedResults(output, (ms) => done(ms));
      return Promise.resolve(output).finally(() => done(performance.now() - started));
    },
  }));
}

async function* timedResults(results: AsyncIterable<StageResult>, done: (ms: number) => void): AsyncGenerator<StageResult> {
  const iterator = results[Symbol.asyncIterator]();
  let spent = 0;
  try {
    for (;;) {
      const started = performance.now();
      const next = await iterator.next();
      spent += performance.now() - started;
      if (next.done) return;
      yield next.value;
    }
  } finally {
    done(spent);
    await iterator.return?.();
  }
}
