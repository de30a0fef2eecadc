import type pg from 'pg';

/**
 * The query log's hourly rollup (tables QueryHourlyRollup and QueryRollupDelta, kept by a trigger on
 * QueryRecord; the migration `monitoring_rollup` says why it is kept that way). This module folds the
 * trigger's deltas into the rollup; the dashboard's readers add the deltas not folded yet themselves.
 */

/**
 * The upper bounds of the duration bins, in milliseconds: bin 0 holds durations under 1 ms, bin i
 * those from DURATION_BOUNDS_MS[i - 1] up to DURATION_BOUNDS_MS[i], the last bin 10 minutes and over.
 * The same list as the migration's function "conveyor_duration_bin" (a test compares them).
 */
export const DURATION_BOUNDS_MS: readonly number[] = [
  1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 250, 300, 400, 500, 600, 750, 1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 7500,
  10000, 12500, 15000, 20000, 25000, 30000, 40000, 50000, 60000, 90000, 120000, 180000, 300000, 600000,
];
export const DURATION_BIN_COUNT = DURATION_BOUNDS_MS.length + 1;

/**
 * One fold at a time across admin replicas: a second would find the first one's rows locked and wait.
 * Transaction-scoped like the retention lock (safe behind a transaction-pooling PgBouncer); the pair
 * of keys is this concept's alone.
 */
export const ROLLUP_LOCK_KEYS: readonly [number, number] = [0x636f6e76 /* "conv" */, 2];

const KEYS = ['hour', 'botId', 'pipelineId', 'model', 'runner'] as const;
const SUMMED = ['messages', 'succeeded', 'failed', 'modelCalls', 'inputTokens', 'outputTokens', 'cost', 'costed', 'finished', 'durationMs'] as const;
const q = (c: string) => `"${c}"`;
const bins = (f: (i: number) => string) => `ARRAY[${Array.from({ length: DURATION_BIN_COUNT }, (_, i) => f(i)).join(', ')}]::int[]`;

/**
 * Folds the oldest `limit` deltas in one statement: they are deleted and their sums added to their
 * hours' rows at once, so a reader's snapshot sees each delta exactly once (in the delta table or in
 * the rollup). Rows are upserted in key order.
 */
const FOLD = `WITH d AS (
    DELETE FROM "QueryRollupDelta" WHERE "id" IN (SELECT "id" FROM "QueryRollupDelta" ORDER BY "id" LIMIT $1) RETURNING *
  ), g AS (
    SELECT ${KEYS.map(q).join(', ')}, sum("sign")::int AS "messages", sum("sign" * "succeeded")::int AS "succeeded", sum("sign" * "failed")::int AS "failed",
      sum("sign" * "modelCalls")::bigint AS "modelCalls", sum("sign" * "inputTokens")::bigint AS "inputTokens", sum("sign" * "outputTokens")::bigint AS "outputTokens",
      COALESCE(sum("sign" * "cost"), 0) AS "cost", (COALESCE(sum("sign") FILTER (WHERE "cost" IS NOT NULL), 0))::int AS "costed",
      sum("sign" * "finished")::int AS "finished", COALESCE(sum("sign" * "durationMs"), 0) AS "durationMs",
      ${bins((i) => `COALESCE(sum("sign") FILTER (WHERE "bin" = ${i}), 0)`)} AS "durationBins"
    FROM d GROUP BY ${KEYS.map(q).join(', ')}
  ), ins AS (
    INSERT INTO "QueryHourlyRollup" (${[...KEYS, ...SUMMED, 'durationBins'].map(q).join(', ')})
      SELECT ${[...KEYS, ...SUMMED, 'durationBins'].map(q).join(', ')} FROM g ORDER BY ${KEYS.map(q).join(', ')}
    ON CONFLICT (${KEYS.map(q).join(', ')}) DO UPDATE SET
      ${SUMMED.map((c) => `${q(c)} = "QueryHourlyRollup".${q(c)} + EXCLUDED.${q(c)}`).join(', ')},
      "durationBins" = ${bins((i) => `COALESCE("QueryHourlyRollup"."durationBins"[${i + 1}], 0) + EXCLUDED."durationBins"[${i + 1}]`)}
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM d)::int AS folded`;

/**
 * Folds at most `limit` of the oldest deltas into the rollup in one transaction under the rollup
 * lock. Says how many it folded, or null when another process holds the lock (it is folding).
 */
export async function foldRollupDeltas(pool: pg.Pool, limit: number): Promise<number | null> {
  if (!(limit >= 1)) throw new Error('the rollup fold limit must be at least 1');
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2) AS locked', [...ROLLUP_LOCK_KEYS]);
    if (!rows[0]?.locked) {
      await client.query('ROLLBACK');
      return null;
    }
    const folded = await client.query<{ folded: number }>(FOLD, [limit]);
    await client.query('COMMIT');
    return folded.rows[0]?.folded ?? 0;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Folds batches of `batchSize` until no delta is left or `maxBatches` ran; the total folded, null when contended. */
export async function foldAllRollupDeltas(pool: pg.Pool, batchSize: number, maxBatches: number): Promise<{ folded: number; contended: boolean; more: boolean }> {
  let folded = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const n = await foldRollupDeltas(pool, batchSize);
    if (n === null) return { folded, contended: true, more: true };
    folded += n;
    if (n < batchSize) return { folded, contended: false, more: false };
  }
  return { folded, contended: false, more: true };
}
