import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdminApi } from '@conveyor/contracts';
import { queryTimeline } from './stats.js';

function entry(over: Partial<AdminApi.QueryLogEntry>): AdminApi.QueryLogEntry {
  return { id: 'q', botId: 'b', pipelineId: 'p', launcherType: 'person', launcherId: 'u', status: 'succeeded', receivedAt: '2026-01-01T00:00:00.000Z', startedAt: null, finishedAt: null, error: null, traceId: null, traceSampled: null, attempt: 1, mergedInto: null, model: null, runner: null, modelCalls: null, inputTokens: null, outputTokens: null, cost: null, ...over };
}

describe('query timeline', () => {
  test('a query timeline: received, started, failed with the reason', () => {
    const steps = queryTimeline(entry({ status: 'failed', startedAt: '2026-01-01T00:00:00.050Z', finishedAt: '2026-01-01T00:00:01.000Z', error: 'model down' }));
    assert.deepEqual(steps.map((s) => [s.step, s.offsetMs]), [['received', 0], ['started', 50], ['failed', 1000]]);
    assert.deepEqual(steps[2], { step: 'failed', at: '2026-01-01T00:00:01.000Z', offsetMs: 1000, error: 'model down' });
  });
});
