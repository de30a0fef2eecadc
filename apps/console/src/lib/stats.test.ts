import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdminApi } from '@conveyor/contracts';
import { dashboardStats, percentile, queryTimeline } from './stats.js';

function entry(over: Partial<AdminApi.QueryLogEntry>): AdminApi.QueryLogEntry {
  return { id: 'q', botId: 'b', pipelineId: 'p', launcherType: 'person', launcherId: 'u', status: 'succeeded', receivedAt: '2026-01-01T00:00:00.000Z', startedAt: null, finishedAt: null, error: null, traceId: null, traceSampled: null, attempt: 1, mergedInto: null, model: null, runner: null, modelCalls: null, inputTokens: null, outputTokens: null, cost: null, ...over };
}

describe('dashboard figures', () => {
  test('nearest-rank percentiles', () => {
    assert.equal(percentile([], 95), null);
    assert.equal(percentile([5], 95), 5);
    assert.equal(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 95), 95);
  });
  test('per-minute counts, outcomes and latency of the window; older entries left out', () => {
    const now = Date.parse('2026-01-01T00:02:30.000Z');
    const s = dashboardStats([
      entry({ receivedAt: '2026-01-01T00:02:00.000Z', finishedAt: '2026-01-01T00:02:01.000Z' }),
      entry({ receivedAt: '2026-01-01T00:01:10.000Z', finishedAt: '2026-01-01T00:01:10.200Z' }),
      entry({ receivedAt: '2026-01-01T00:01:20.000Z', status: 'failed', finishedAt: '2026-01-01T00:01:25.000Z' }),
      entry({ receivedAt: '2026-01-01T00:02:10.000Z', status: 'running' }),
      entry({ receivedAt: '2025-12-31T23:00:00.000Z' }),
    ], now, 3);
    assert.deepEqual(s.perMinute.map((m) => m.count), [0, 2, 2]);
    assert.equal(s.perMinute[2].minute, Date.parse('2026-01-01T00:02:00.000Z'));
    assert.deepEqual([s.total, s.succeeded, s.failed, s.inFlight], [4, 2, 1, 1]);
    assert.equal(s.p95LatencyMs, 1000);
    assert.equal(s.medianLatencyMs, 200);
  });
  test('a query timeline: received, started, failed with the reason', () => {
    const steps = queryTimeline(entry({ status: 'failed', startedAt: '2026-01-01T00:00:00.050Z', finishedAt: '2026-01-01T00:00:01.000Z', error: 'model down' }));
    assert.deepEqual(steps.map((s) => [s.step, s.offsetMs]), [['received', 0], ['started', 50], ['failed', 1000]]);
    assert.deepEqual(steps[2], { step: 'failed', at: '2026-01-01T00:00:01.000Z', offsetMs: 1000, error: 'model down' });
  });
});
