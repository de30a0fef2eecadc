// The dashboard's server-side queries over a large query log: 1,000,000 QueryRecord rows spread over
// 30 days (5 bots, 3 pipelines, 4 models, 5 % failed, tokens and cost on the answered ones) in a
// temporary database (the insert trigger appends the hourly rollup's deltas, folded into the rollup
// before timing, as the admin service does), then the summary statement the admin API runs (GET
// /monitoring/summary) per range, read through the rollup and, for comparison, from the raw records
// only; a filtered summary, the error log's first page and a CSV export's first batch; p50 of a few
// runs each. Run it on a quiet machine: the insert, the fold and the raw 30-day scan are CPU-heavy.
//
//   npm run bench:dashboard [-- --rows 1000000 --runs 5]
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { closeDatabase, createDatabase, foldAllRollupDeltas } from '@conveyor/persistence';
import { createTempDatabase } from '@conveyor/persistence/testing';
import { monitoringErrors, queryLogCsv, resolveRange, summaryStatement } from '@conveyor/admin';
import { fmtMs, percentile } from './stats.js';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '1000000' }, runs: { type: 'string', default: '5' } } });
const rows = Number(values.rows);
const runs = Number(values.runs);
if (!(rows >= 1 && runs >= 1)) throw new Error('--rows and --runs must be positive numbers');

const temp = await createTempDatabase();
const db = createDatabase(temp.url, 4);
try {
  const loadStarted = performance.now();
  // One statement generates the rows in the server: faster than COPY from here, nothing crosses the wire.
  await db.pool.query(
    `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "status", "receivedAt", "startedAt", "finishedAt", "error",
       "attempt", "model", "runner", "modelCalls", "inputTokens", "outputTokens", "cost")
     SELECT 'q' || i, 'bot-' || (i % 5), 'pipeline-' || (i % 3), 'person', 'user-' || (i % 20000),
       CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'succeeded' END,
       t, t + interval '5 milliseconds', t + (200 + (i % 3000)) * interval '1 millisecond',
       CASE WHEN i % 20 = 0 THEN 'model call failed: 503' END,
       1, 'model-' || (i % 4), 'local-agent', 1 + (i % 3), 200 + (i % 800), 50 + (i % 300), (200 + (i % 800)) * 0.000001 + (50 + (i % 300)) * 0.000004
     FROM generate_series(1, $1::int) AS i, LATERAL (SELECT now()::timestamp - (i::float8 / $1) * interval '30 days' AS t) AS r`,
    [rows],
  );
  await db.pool.query('ANALYZE "QueryRecord"');
  console.log(`inserted ${rows.toLocaleString('en')} query records in ${fmtMs(performance.now() - loadStarted)}`);
  const foldStarted = performance.now();
  const fold = await foldAllRollupDeltas(db.pool, 50_000, 1_000_000);
  await db.pool.query('ANALYZE "QueryHourlyRollup"');
  const rollupRows = (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM "QueryHourlyRollup"')).rows[0]!.n;
  console.log(`folded ${fold.folded.toLocaleString('en')} rollup deltas into ${rollupRows.toLocaleString('en')} hourly rows in ${fmtMs(performance.now() - foldStarted)}`);

  const time = async (label: string, fn: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      await fn();
      samples.push(performance.now() - started);
    }
    console.log(`${label.padEnd(40)} p50 ${fmtMs(percentile(samples, 50))}  (min ${fmtMs(Math.min(...samples))}, max ${fmtMs(Math.max(...samples))}, ${runs} runs)`);
  };
  const summary = (input: Parameters<typeof summaryStatement>[0], rollup = true) => () => db.pool.query(summaryStatement(input, resolveRange(input), { rollup }));
  for (const range of ['1h', '24h', '7d', '30d'] as const) await time(`summary ${range}`, summary({ range }));
  for (const range of ['24h', '7d', '30d'] as const) await time(`summary ${range}, raw records only`, summary({ range }, false));
  await time('summary 30d, one model', summary({ range: '30d', model: 'model-1' }));
  await time('summary 7d, one pipeline', summary({ range: '7d', pipelineId: 'pipeline-2' }));
  await time('error log 30d, first page of 50', () => monitoringErrors(db.prisma, { range: '30d', limit: 50 }));
  await time('CSV 24h, first 2,000 rows', async () => {
    const lines = queryLogCsv(db.pool, { range: '24h' });
    await lines.next();
    await lines.next();
    await lines.return(undefined);
  });
  const plan = await db.pool.query(`EXPLAIN ${summaryStatement({ range: '1h' }, resolveRange({ range: '1h' })).text}`, summaryStatement({ range: '1h' }, resolveRange({ range: '1h' })).values);
  console.log(`plan of the 1h summary: ${plan.rows.map((r: Record<string, string>) => Object.values(r)[0]).filter((l) => /Scan/.test(l)).map((l) => l.trim()).join('; ')}`);
} finally {
  await closeDatabase(db);
  await temp.drop();
}
