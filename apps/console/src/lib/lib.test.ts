import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { PipelineConfigSchema } from '@conveyor/pipeline/config';
import type { AdminApi } from '@conveyor/contracts';
import { formatRoute, parseRoute } from './routes.js';
import { traceUrl, DEFAULT_TRACE_URL_TEMPLATE } from './trace-link.js';
import { dashboardStats, percentile, queryTimeline } from './stats.js';
import { SseParser, MAX_EVENT_CHARS } from './sse.js';
import { buildFields, getAt, jsonOrText, numberInput, setAt, type FieldNode } from './schema-form.js';
import { describeError, ApiError } from './api.js';

describe('routes', () => {
  test('a fragment names the page, the resource and the filters, and formats back the same', () => {
    const r = parseRoute('#/queries/q%2F1?botId=b1&status=failed');
    assert.deepEqual(r, { page: 'queries', id: 'q/1', params: { botId: 'b1', status: 'failed' } });
    assert.equal(formatRoute({ page: 'queries', id: 'q/1', params: { botId: 'b1', status: 'failed', empty: undefined } }), '#/queries/q%2F1?botId=b1&status=failed');
  });
  test('an unknown or empty fragment is the dashboard', () => {
    assert.deepEqual(parseRoute(''), { page: 'dashboard', params: {} });
    assert.deepEqual(parseRoute('#/nope/x'), { page: 'dashboard', params: {} });
  });
});

describe('trace links', () => {
  const id = '0af7651916cd43dd8448eb211c80319c';
  test('the template gets the trace id', () => {
    assert.equal(traceUrl(DEFAULT_TRACE_URL_TEMPLATE, id), `http://localhost:16686/trace/${id}`);
  });
  test('no link for a missing or malformed id, a template without {traceId}, or a non-http URL', () => {
    assert.equal(traceUrl(DEFAULT_TRACE_URL_TEMPLATE, null), undefined);
    assert.equal(traceUrl(DEFAULT_TRACE_URL_TEMPLATE, 'abc'), undefined);
    assert.equal(traceUrl('http://jaeger/search', id), undefined);
    assert.equal(traceUrl('javascript:alert({traceId})', id), undefined);
  });
});

function entry(over: Partial<AdminApi.QueryLogEntry>): AdminApi.QueryLogEntry {
  return { id: 'q', botId: 'b', pipelineId: 'p', launcherType: 'person', launcherId: 'u', status: 'succeeded', receivedAt: '2026-01-01T00:00:00.000Z', startedAt: null, finishedAt: null, error: null, traceId: null, attempt: 1, mergedInto: null, ...over };
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
    assert.deepEqual(steps.map((s) => [s.label, s.offsetMs]), [['received by ingress', 0], ['started by orchestrator', 50], ['failed: model down', 1000]]);
  });
});

describe('server-sent events', () => {
  test('events split across chunks, comments skipped, multi-line data joined', () => {
    const p = new SseParser();
    assert.deepEqual(p.push(': connected\n\nevent: part\nda'), []);
    assert.deepEqual(p.push('ta: {"a":1}\r\n\r\ndata: x\ndata: y\n\n'), [{ event: 'part', data: '{"a":1}' }, { event: 'message', data: 'x\ny' }]);
  });
  test('an unterminated event over the bound is an error', () => {
    const p = new SseParser();
    assert.throws(() => p.push(`data: ${'x'.repeat(MAX_EVENT_CHARS)}`), /over/);
  });
});

describe('the pipeline form', () => {
  const root = buildFields(z.toJSONSchema(PipelineConfigSchema, { io: 'output', unrepresentable: 'any' }));
  const find = (path: string): FieldNode | undefined => {
    const walk = (n: FieldNode): FieldNode | undefined => (n.path.join('.') === path ? n : n.children?.map(walk).find(Boolean));
    return walk(root);
  };
  test('is built from the schema with LangBot key names and input kinds', () => {
    assert.deepEqual(root.children?.map((c) => c.key), ['trigger', 'safety', 'ai', 'output']);
    assert.equal(find('trigger.group-respond-rules.at')?.kind, 'boolean');
    assert.equal(find('trigger.group-respond-rules.prefix')?.kind, 'string-list');
    assert.deepEqual(find('ai.runner.runner')?.options?.slice(0, 2), ['local-agent', 'dify-service-api']);
    const limit = find('safety.rate-limit.window-length');
    assert.equal(limit?.kind, 'integer');
    assert.equal(limit?.min, 1);
    assert.equal(limit?.max, undefined, 'the integer bound zod adds is no input bound');
    assert.deepEqual(find('ai.local-agent.prompt')?.itemFields?.map((f) => [f.key, f.kind]), [['role', 'string'], ['content', 'string']]);
    assert.equal(find('ai.local-agent.model')?.kind, 'json');
    assert.equal(find('ai.local-agent.knowledge-base')?.optional, true);
  });
  test('setAt copies, keeps siblings and unknown keys, and removes with undefined', () => {
    const before = { ai: { runner: { runner: 'local-agent', 'expire-time': 0 }, dify: { keep: 1 } } };
    const after = setAt(before, ['ai', 'runner', 'runner'], 'coze-api');
    assert.equal(getAt(after, ['ai', 'runner', 'runner']), 'coze-api');
    assert.deepEqual(getAt(after, ['ai', 'dify']), { keep: 1 });
    assert.equal(before.ai.runner.runner, 'local-agent');
    assert.deepEqual(setAt(after, ['ai', 'dify'], undefined), { ai: { runner: { runner: 'coze-api', 'expire-time': 0 } } });
  });
  test('typed text: numbers, JSON or a plain model id', () => {
    assert.equal(numberInput(' 60 ', 'integer'), 60);
    assert.equal(numberInput('1.5', 'integer'), '1.5');
    assert.equal(numberInput('1.5', 'number'), 1.5);
    assert.equal(jsonOrText('gpt-4o'), 'gpt-4o');
    assert.equal(jsonOrText('4o-mini'), '4o-mini');
    assert.deepEqual(jsonOrText('{"primary":"a","fallbacks":["b"]}'), { primary: 'a', fallbacks: ['b'] });
  });
});

describe('error messages', () => {
  test('a stale write says to reload; a validation error names the field', () => {
    assert.match(describeError(new ApiError(409, 'version_conflict', 'version 2 is not current', undefined, [], 3)), /Changed by someone else.*reload/);
    assert.equal(describeError(new ApiError(400, 'validation_failed', 'invalid base URL', 'body.baseUrl')), 'invalid base URL (body.baseUrl)');
  });
});
