import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DURATION_BOUNDS_MS, foldAllRollupDeltas, foldRollupDeltas, RetentionPruner } from '@conveyor/persistence';
import { useTempDatabase } from '@conveyor/persistence/testing';
import type { AdminApi } from '@conveyor/contracts';
import { binnedPercentile, monitoringSummary, planRange, resolveRange } from './monitoring.js';

const database = useTempDatabase();
const HOUR = 3_600_000;
/** Not on an hour: every range below has partial hours at both ends. */
const now = new Date('2026-11-20T15:37:12.345Z');

/** The bin a duration falls in, as "conveyor_duration_bin" numbers them. */
const binOf = (ms: number) => DURATION_BOUNDS_MS.filter((b) => b <= ms).length;

/**
 * `count` records of the last 80 hours before `now`, deterministic but varied: 3 bots, a pipeline or
 * none, a model or none, some failed, some still running (no finish), some without tokens or cost.
 */
async function seed(count: number) {
  await database().pool.query(
    `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "status", "receivedAt", "finishedAt", "model", "runner",
       "modelCalls", "inputTokens", "outputTokens", "cost")
     SELECT 'r' || i, 'bot-' || (i % 3), CASE WHEN i % 4 = 0 THEN NULL ELSE 'pipe-' || (i % 2) END, 'person', 'u' || (i % 7),
       CASE WHEN i % 11 = 0 THEN 'running' WHEN i % 5 = 0 THEN 'failed' ELSE 'succeeded' END,
       t, CASE WHEN i % 11 = 0 THEN NULL ELSE t + ((i * 37) % 9000 + (i % 3)) * interval '1 millisecond' END,
       CASE WHEN i % 6 = 0 THEN NULL ELSE 'm-' || (i % 3) END, 'local-agent',
       CASE WHEN i % 6 = 0 THEN NULL ELSE 1 + i % 2 END, CASE WHEN i % 6 = 0 THEN NULL ELSE 100 + i % 50 END, CASE WHEN i % 6 = 0 THEN NULL ELSE 20 + i % 9 END,
       CASE WHEN i % 6 = 0 OR i % 4 = 1 THEN NULL ELSE (100 + i % 50) * 0.000001 END
     FROM generate_series(1, $1::int) AS i, LATERAL (SELECT $2::timestamp - (i::float8 / $1) * interval '80 hours' AS t) r`,
    [count, now.toISOString()],
  );
}

function assertSame(rolled: AdminApi.MonitoringSummary, raw: AdminApi.MonitoringSummary, label: string) {
  const same = (a: AdminApi.MonitoringSummary['totals'], b: AdminApi.MonitoringSummary['totals'], where: string) => {
    for (const k of ['messages', 'succeeded', 'failed', 'modelCalls', 'inputTokens', 'outputTokens'] as const) assert.equal(a[k], b[k], `${label} ${where} ${k}`);
    if (b.cost === null) assert.equal(a.cost, null, `${label} ${where} cost`);
    else assert.ok(a.cost !== null && Math.abs(a.cost - b.cost) <= 1e-9 * Math.max(1, b.cost), `${label} ${where} cost ${a.cost} vs ${b.cost}`);
    // Percentiles over rollup hours come from the duration bins: off by at most the width of the bins
    // of the two order statistics they lie between, here at most 2.5 s (the bin [7.5 s, 10 s) of the
    // longest durations seeded), and mostly far less.
    for (const k of ['p50Ms', 'p95Ms'] as const) {
      if (b[k] === null) assert.equal(a[k], null, `${label} ${where} ${k}`);
      else assert.ok(a[k] !== null && Math.abs(a[k] - b[k]) <= 2_501, `${label} ${where} ${k} ${a[k]} vs ${b[k]}`);
    }
  };
  assert.equal(rolled.bucketSeconds, raw.bucketSeconds);
  // Over the whole range (thousands of records) the estimate is within the exact value's bin or the next.
  for (const k of ['p50Ms', 'p95Ms'] as const) assert.ok(Math.abs(binOf(rolled.totals[k]!) - binOf(raw.totals[k]!)) <= 1, `${label} totals ${k} ${rolled.totals[k]} vs ${raw.totals[k]}`);
  same(rolled.totals, raw.totals, 'totals');
  for (const key of ['byBot', 'byPipeline', 'byModel'] as const) {
    assert.deepEqual(rolled[key].map((g) => g.key), raw[key].map((g) => g.key), `${label} ${key} keys`);
    rolled[key].forEach((g, i) => same(g, raw[key][i]!, `${key} ${g.key}`));
  }
  assert.deepEqual(rolled.series.map((b) => b.start), raw.series.map((b) => b.start), `${label} series buckets`);
  rolled.series.forEach((b, i) => same(b, raw.series[i]!, `bucket ${b.start}`));
}

const ranges: AdminApi.MonitoringRangeInput[] = [
  { range: '24h' },
  { range: '7d' },
  { range: '30d' },
  { range: '24h', botId: 'bot-1' },
  { range: '7d', pipelineId: 'pipe-0' },
  { range: '7d', model: 'm-2' },
  { range: 'custom', from: new Date(now.getTime() - 50.3 * HOUR).toISOString(), to: new Date(now.getTime() - 3.9 * HOUR).toISOString() },
  { range: 'custom', from: new Date(now.getTime() - 30 * HOUR).toISOString(), to: new Date(now.getTime() - 29.2 * HOUR).toISOString() },
] as AdminApi.MonitoringRangeInput[];

test('summaries read through the hourly rollup equal the raw records\' over ranges with partial edge hours, folded or not', async () => {
  await seed(6_000);
  // Finishes and a redelivered run writing its end again: the deltas must add up to what the rows hold now.
  await database().pool.query(`UPDATE "QueryRecord" SET "status" = 'succeeded', "finishedAt" = "receivedAt" + interval '2 seconds', "inputTokens" = 7, "cost" = 0.5 WHERE "id" IN ('r11', 'r22', 'r33')`);
  await database().pool.query(`UPDATE "QueryRecord" SET "status" = 'succeeded', "finishedAt" = "receivedAt" + interval '2 seconds', "inputTokens" = 7, "cost" = 0.5 WHERE "id" IN ('r11', 'r22')`);
  assert.ok(planRange(resolveRange({ range: '7d' }, now)).rollup, 'the 7-day range reads rollup hours');

  // Nothing folded: the rollup path reads every whole hour from the deltas.
  for (const input of ranges) assertSame(await monitoringSummary(database().pool, input, now), await monitoringSummary(database().pool, input, now, { rollup: false }), `unfolded ${JSON.stringify(input)}`);
  // Half folded, then some more writes on top: rollup rows plus newer deltas.
  assert.equal(await foldRollupDeltas(database().pool, 3_000), 3_000);
  await database().pool.query(`UPDATE "QueryRecord" SET "status" = 'failed', "finishedAt" = "receivedAt" + interval '300 milliseconds', "error" = 'x' WHERE "id" IN ('r44', 'r55', 'r1')`);
  for (const input of ranges) assertSame(await monitoringSummary(database().pool, input, now), await monitoringSummary(database().pool, input, now, { rollup: false }), `half folded ${JSON.stringify(input)}`);
  // All folded.
  const all = await foldAllRollupDeltas(database().pool, 1_000, 1_000);
  assert.deepEqual([all.contended, all.more], [false, false]);
  assert.equal((await database().pool.query('SELECT count(*)::int AS n FROM "QueryRollupDelta"')).rows[0].n, 0);
  for (const input of ranges) assertSame(await monitoringSummary(database().pool, input, now), await monitoringSummary(database().pool, input, now, { rollup: false }), `folded ${JSON.stringify(input)}`);
  const day = await monitoringSummary(database().pool, { range: '24h' }, now);
  assert.equal(day.series[0]!.start, '2026-11-19T15:00:00.000Z', 'hourly buckets start on the hour');
  assert.ok(day.totals.messages > 1_000);
});

test('a write that changes nothing the rollup counts appends no delta; a timeline step appended appends none either', async () => {
  const id = randomUUID();
  const pool = database().pool;
  const deltas = async () => (await pool.query('SELECT count(*)::int AS n FROM "QueryRollupDelta"')).rows[0].n as number;
  const before = await deltas();
  await pool.query(`INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "receivedAt") VALUES ($1, 'b', 'person', 'x', now())`, [id]);
  assert.equal(await deltas(), before + 1);
  await pool.query(`UPDATE "QueryRecord" SET "status" = 'running', "attempt" = 2, "stages" = '[{"stage":"x","at":1,"ms":1}]' WHERE "id" = $1`, [id]);
  assert.equal(await deltas(), before + 1);
  await pool.query(`UPDATE "QueryRecord" SET "status" = 'succeeded', "finishedAt" = now() WHERE "id" = $1`, [id]);
  assert.equal(await deltas(), before + 3);
});

test('the duration bins of the database function are the ones the percentile estimate reads', async () => {
  const probes = DURATION_BOUNDS_MS.flatMap((b) => [b - 0.001, b]).concat([0, 10 ** 9]);
  const { rows } = await database().pool.query<{ bin: number }>('SELECT "conveyor_duration_bin"(ms) AS bin FROM unnest($1::float8[]) WITH ORDINALITY AS u(ms, i) ORDER BY i', [probes]);
  assert.deepEqual(rows.map((r) => r.bin), probes.map(binOf));
  assert.equal(binnedPercentile([0, 0, 0], 0.5), null);
  const hist = Array.from({ length: DURATION_BOUNDS_MS.length + 1 }, () => 0);
  hist[binOf(1100)] = 10;
  const p50 = binnedPercentile(hist, 0.5)!;
  assert.ok(p50 >= 1000 && p50 <= 1250, String(p50));
});

test('retention prunes rollup hours by their own age and leaves younger ones', async () => {
  const pool = database().pool;
  const bot = `bot-${randomUUID()}`;
  for (const ageDays of [500, 401, 399, 1]) {
    await pool.query(`INSERT INTO "QueryHourlyRollup" ("hour", "botId", "messages") VALUES (date_trunc('hour', now()::timestamp - make_interval(days => $2::int)), $1, 1)`, [bot, ageDays]);
  }
  const summary = await new RetentionPruner(pool, { queryDays: 0, rollupDays: 400, conversationDays: 0, auditDays: 0, deadLetterDays: 0 }, { batchSize: 1, pauseMs: 0, maxBatchesPerKind: 10 }).run();
  assert.equal(summary.pruned.rollup, 2);
  assert.equal((await pool.query('SELECT count(*)::int AS n FROM "QueryHourlyRollup" WHERE "botId" = $1', [bot])).rows[0].n, 2);
});
