import { test } from 'node:test';
import assert from 'node:assert/strict';
import { timedStages, type StageTime } from './timed-stages.js';
import type { Stage } from './stage.js';
import type { PipelineQuery } from './query.js';
import type { StageResult } from './result.js';

const result = { kind: 'continue' } as unknown as StageResult;

test('each stage reports its start and the time spent in it, a generator stage once it is done', async () => {
  const times: StageTime[] = [];
  const slow: Stage = { name: 'Slow', process: async () => { await new Promise((r) => setTimeout(r, 30)); return result; } };
  const many: Stage = {
    name: 'Many',
    async *process() {
      yield result;
      yield result;
    },
  };
  const [a, b] = timedStages([slow, many], (t) => times.push(t));
  const before = Date.now();
  assert.equal(await a!.process({} as PipelineQuery), result);
  const produced: StageResult[] = [];
  for await (const r of b!.process({} as PipelineQuery) as AsyncIterable<StageResult>) produced.push(r);
  assert.equal(produced.length, 2);
  assert.deepEqual(times.map((t) => t.stage), ['Slow', 'Many']);
  assert.ok(times[0]!.ms >= 25 && times[0]!.at >= before);
});
