import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RetryableError } from '@conveyor/contracts';
import { executeFrom } from './execute.js';
import { runStages } from './run.js';
import { interrupt, proceed, type StageResult } from './result.js';
import type { Stage } from './stage.js';
import { recordingDeps, testQuery } from '../testing.js';

function single(name: string, log: string[], result: (n: number) => StageResult = () => proceed()): Stage {
  let n = 0;
  return { name, process: () => (log.push(name), result(n++)) };
}
function generator(name: string, log: string[], items: Array<StageResult | Error>): Stage {
  return {
    name,
    async *process() {
      for (const item of items) {
        log.push(name);
        if (item instanceof Error) throw item;
        yield item;
      }
    },
  };
}

test('a generator runs every downstream stage per item before the next item: A B C D E D E', async () => {
  const log: string[] = [];
  const stages = [single('A', log), single('B', log), generator('C', log, [proceed(), proceed()]), single('D', log), single('E', log)];
  await executeFrom(stages, 0, testQuery(), recordingDeps().deps);
  assert.deepEqual(log.join(' '), 'A B C D E C D E');
});

test('an INTERRUPT downstream ends only that item; the generator keeps producing', async () => {
  const log: string[] = [];
  const stages = [generator('C', log, [proceed(), proceed(), proceed()]), single('D', log, (n) => (n === 0 ? interrupt() : proceed())), single('E', log)];
  await executeFrom(stages, 0, testQuery(), recordingDeps().deps);
  assert.deepEqual(log.join(' '), 'C D C D E C D E');
});

test('an INTERRUPT yielded by the generator itself stops it, with its notices sent', async () => {
  const log: string[] = [];
  const stages = [generator('C', log, [proceed(), interrupt({ userNotice: 'stop' }), proceed()]), single('D', log)];
  const { deps, rec } = recordingDeps();
  await executeFrom(stages, 0, testQuery(), deps);
  assert.deepEqual(log.join(' '), 'C D C');
  assert.deepEqual(rec.notices, [[{ type: 'Plain', text: 'stop' }]]);
});

test('generators nest: every inner item runs the stages after the inner generator', async () => {
  const log: string[] = [];
  const stages = [generator('P', log, [proceed(), proceed()]), single('R', log), generator('W', log, [proceed(), proceed()]), single('S', log)];
  await executeFrom(stages, 0, testQuery(), recordingDeps().deps);
  assert.deepEqual(log.join(' '), 'P R W S W S P R W S W S');
});

test('a single INTERRUPT stops the chain; notices go out with at-sender in groups; an error notice fails the query', async () => {
  const log: string[] = [];
  const stages = [single('A', log, () => interrupt({ userNotice: 'no', errorNotice: 'bad', consoleNotice: 'c' })), single('B', log)];
  const { deps, rec } = recordingDeps();
  const q = testQuery({ group: true, senderId: 'u9' });
  await executeFrom(stages, 0, q, deps);
  assert.deepEqual(log, ['A']);
  assert.deepEqual(rec.notices, [[{ type: 'At', target: 'u9', display: '' }, { type: 'Plain', text: 'no' }]]);
  assert.deepEqual(rec.failures, ['bad']);
  assert.equal(q.variables._monitoring_has_error, true);
  assert.ok(rec.logs.some((l) => l.level === 'info' && (l.obj as { notice?: string }).notice === 'c'));
});

for (const [mode, expected] of [['show-hint', 'Request failed.'], ['show-error', 'kaboom'], ['hide', null]] as const) {
  test(`an exception mid-generator aborts the query and follows exception-handling ${mode}`, async () => {
    const log: string[] = [];
    const stages = [generator('C', log, [proceed(), new Error('kaboom'), proceed()]), single('D', log)];
    const { deps, rec } = recordingDeps();
    const q = testQuery({ config: { output: { misc: { 'exception-handling': mode } } } });
    assert.equal(await runStages(stages, 0, q, deps), 'failed');
    assert.deepEqual(log.join(' '), 'C D C', 'the rest of the generator output is discarded');
    assert.deepEqual(rec.notices, expected === null ? [] : [[{ type: 'Plain', text: expected }]]);
    assert.match(rec.failures[0], /C: kaboom/);
  });
}

test('RetryableError passes through to the bus', async () => {
  const stages: Stage[] = [{ name: 'R', process: () => { throw new RetryableError(10); } }];
  await assert.rejects(runStages(stages, 0, testQuery(), recordingDeps().deps), RetryableError);
});

test('an error that means a dependency is briefly down leaves the pipeline for a retry instead of becoming the failure notice', async () => {
  const outage = Object.assign(new Error('Redis connection lost'), { name: 'MaxRetriesPerRequestError' });
  const failing: Stage = { name: 'NeedsRedis', process: async () => { throw outage; } };
  const { deps, rec } = recordingDeps({ isOutage: (e) => e === outage });
  await assert.rejects(runStages([failing], 0, testQuery(), deps), (e) => e === outage);
  assert.deepEqual(rec.notices, [], 'no failure notice reached the user');
  assert.deepEqual(rec.failures, [], 'the query is not marked failed');
});
