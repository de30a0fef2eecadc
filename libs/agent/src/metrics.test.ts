import { after, test } from 'node:test';
import assert from 'node:assert/strict';

// The SDK must be running before the instruments are created, as `--import @conveyor/telemetry/register`
// arranges in a service; hence the imports in this order.
await import('@conveyor/telemetry/register');
const { prometheusExporter, shutdownTelemetry } = await import('@conveyor/telemetry/sdk');
const { agentMetrics } = await import('./metrics.js');
const { METRIC_NAMES } = await import('@conveyor/telemetry');

after(() => shutdownTelemetry());

interface Buckets { boundaries: number[]; counts: number[] }

/** The bucket counts of one model's data point of a histogram, as the /metrics endpoint reads them. */
async function buckets(name: string, model: string): Promise<Buckets> {
  const { resourceMetrics } = await prometheusExporter()!.collect();
  const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)!;
  const point = metric.dataPoints.find((p) => p.attributes['gen_ai.request.model'] === model)!;
  return (point.value as { buckets: Buckets }).buckets;
}

/** Index of the bucket holding each observation of a histogram with one observation per bucket at most. */
function filledBuckets(counts: number[]): number[] {
  return counts.flatMap((count, i) => (count > 0 ? [i] : []));
}

test('LLM call durations from tens of milliseconds to a minute land in different buckets', async () => {
  const model = `m-${process.pid}-calls`;
  for (const seconds of [0.05, 0.7, 1.7, 9, 60]) agentMetrics.operationDuration.record(seconds, { 'gen_ai.request.model': model });
  const { boundaries, counts } = await buckets(METRIC_NAMES.genAiOperationDuration, model);
  assert.equal(filledBuckets(counts).length, 5, `each call its own bucket: ${JSON.stringify({ boundaries, counts })}`);
  assert.ok(boundaries.includes(1.28) && boundaries.includes(2.56), 'seconds-scale boundaries');
});

test('times to first chunk from 50 ms to 8 s land in different buckets', async () => {
  const model = `m-${process.pid}-ttfc`;
  for (const seconds of [0.05, 0.3, 0.9, 2, 8]) agentMetrics.timeToFirstChunk.record(seconds, { 'gen_ai.request.model': model });
  const { boundaries, counts } = await buckets(METRIC_NAMES.genAiTimeToFirstChunk, model);
  assert.equal(filledBuckets(counts).length, 5, `each its own bucket: ${JSON.stringify({ boundaries, counts })}`);
});

test('token counts from a short reply to a long context land in different buckets', async () => {
  const model = `m-${process.pid}-tokens`;
  for (const tokens of [3, 50, 900, 10_000, 200_000]) agentMetrics.tokenUsage.record(tokens, { 'gen_ai.request.model': model, 'gen_ai.token.type': 'input' });
  const { boundaries, counts } = await buckets(METRIC_NAMES.genAiTokenUsage, model);
  assert.equal(filledBuckets(counts).length, 5, `each its own bucket: ${JSON.stringify({ boundaries, counts })}`);
});
