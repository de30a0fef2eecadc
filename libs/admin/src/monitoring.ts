// Monitoring computed on the server, from the query log's own columns (status, times, model, tokens,
// cost): one grouped statement per summary, reading whole hours from the query log's hourly rollup and
// only the partial hours at the range's ends from the raw records, so a month costs about what a day
// does; no row reaches the browser to be counted.
import type pg from 'pg';
import { z } from 'zod';
import { AdminApi, messageText, type LlmMessage } from '@conveyor/contracts';
import { DURATION_BOUNDS_MS, type PrismaClient } from '@conveyor/persistence';
import { AdminApiError } from './errors.js';
import { getQuery, listQueries } from './query-log-reader.js';

const HOUR_S = 3_600;
const DAY_S = 86_400;
const NAMED_RANGES: Record<Exclude<AdminApi.MonitoringRangeInput['range'], 'custom'>, { seconds: number; bucket: number }> = {
  '1h': { seconds: HOUR_S, bucket: 60 },
  '24h': { seconds: DAY_S, bucket: HOUR_S },
  '7d': { seconds: 7 * DAY_S, bucket: 6 * HOUR_S },
  '30d': { seconds: 30 * DAY_S, bucket: DAY_S },
};
/** Bucket sizes a custom range may get: the smallest that keeps the series at MAX_BUCKETS or fewer. */
const BUCKET_LADDER = [60, 300, 900, HOUR_S, 3 * HOUR_S, 6 * HOUR_S, 12 * HOUR_S, DAY_S, 7 * DAY_S];
const MAX_BUCKETS = 120;
const MAX_CUSTOM_S = 90 * DAY_S;

export interface ResolvedRange {
  from: Date;
  to: Date;
  bucketSeconds: number;
}

/** The range's bounds and bucket size; a custom range needs `from` before `to`, at most 90 days apart. */
export function resolveRange(input: { range: AdminApi.MonitoringRangeInput['range']; from?: string; to?: string }, now = new Date()): ResolvedRange {
  if (input.range !== 'custom') {
    const named = NAMED_RANGES[input.range];
    return { from: new Date(now.getTime() - named.seconds * 1000), to: now, bucketSeconds: named.bucket };
  }
  if (!input.from || !input.to) throw AdminApiError.invalid('query.from', 'a custom range needs from and to');
  const from = new Date(input.from);
  const to = new Date(input.to);
  const seconds = (to.getTime() - from.getTime()) / 1000;
  if (!(seconds > 0)) throw AdminApiError.invalid('query.to', 'must be after from');
  if (seconds > MAX_CUSTOM_S) throw AdminApiError.invalid('query.to', 'a range spans at most 90 days');
  const bucketSeconds = BUCKET_LADDER.find((b) => seconds / b <= MAX_BUCKETS) ?? BUCKET_LADDER[BUCKET_LADDER.length - 1]!;
  return { from, to, bucketSeconds };
}

/** `timestamp without time zone` columns hold UTC (Prisma's convention). */
const utc = (d: Date) => d.toISOString();

interface TotalsRow {
  grouping: number;
  bot: string | null;
  pipeline: string | null;
  model: string | null;
  /** The bucket's start, Unix milliseconds. */
  bucket: number | null;
  messages: number;
  succeeded: number;
  failed: number;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  cost: number | null;
  /** Exact percentiles, over raw records only. */
  p50?: number | null;
  p95?: number | null;
  /** Duration bin counts, when the range read rollup hours. */
  hist?: number[];
}

/** Bits of GROUPING("botId", "pipelineId", "model", bucket): a set bit is a column the row is not grouped by. */
const GROUPED_BY = { all: 0b1111, bot: 0b0111, pipeline: 0b1011, model: 0b1101, bucket: 0b1110 } as const;

/** The filters shared by the range's statements, numbered from parameter `first` on. */
function rangeFilters(input: { botId?: string; pipelineId?: string; model?: string }, first: number): { sql: string; params: string[] } {
  const clauses: string[] = [];
  const params: string[] = [];
  for (const [column, value] of [['botId', input.botId], ['pipelineId', input.pipelineId], ['model', input.model]] as const) {
    if (value === undefined) continue;
    params.push(value);
    clauses.push(`AND "${column}" = $${first + params.length - 1}`);
  }
  return { sql: clauses.join(' '), params };
}

const HOUR_MS = HOUR_S * 1000;
const floorHour = (d: Date) => new Date(Math.floor(d.getTime() / HOUR_MS) * HOUR_MS);
const ceilHour = (d: Date) => new Date(Math.ceil(d.getTime() / HOUR_MS) * HOUR_MS);

/**
 * How a range is read. Buckets of whole hours start on the hour (the first one at the hour `from`
 * falls in, counting only what came from `from` on), so each hour of the rollup falls in one bucket;
 * the whole hours inside the range come from the rollup, the partial hours at its ends from the raw
 * records. Minute buckets (a range of a few hours) read raw records only.
 */
export interface RangePlan {
  /** Where the series' buckets start. */
  origin: Date;
  /** The whole hours read from the rollup, [from, to); null when the range has none or its buckets are under an hour. */
  rollup: { from: Date; to: Date } | null;
}

export function planRange(range: ResolvedRange): RangePlan {
  if (range.bucketSeconds % HOUR_S !== 0) return { origin: range.from, rollup: null };
  const from = ceilHour(range.from);
  const to = floorHour(range.to);
  return { origin: floorHour(range.from), rollup: from < to ? { from, to } : null };
}

const DURATION = `EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000`;
const SOURCE_COLUMNS = '"botId", "pipelineId", "model", t, messages, succeeded, failed, "modelCalls", "inputTokens", "outputTokens", cost, costed, finished, "durationMs", bins, bin, w';

/**
 * The statement of a summary: one scan of the range, grouped five ways at once (grouping sets). Kept
 * apart so the bench measures exactly what the API runs. Over raw records only, the percentiles are
 * exact (percentile_cont); with rollup hours in the range they are estimated from the duration bins
 * (hist), while counts, tokens and cost stay exact sums either way.
 */
export function summaryStatement(input: AdminApi.MonitoringRangeInput, range: ResolvedRange, options: { rollup?: boolean } = {}): { text: string; values: unknown[] } {
  const plan = planRange(range);
  // Raw records only when asked (the rollup's tests and the bench compare both).
  if (!plan.rollup || options.rollup === false) {
    const filters = rangeFilters(input, 5);
    return {
      text: `SELECT GROUPING("botId", "pipelineId", "model", bucket) AS grouping, "botId" AS bot, "pipelineId" AS pipeline, "model",
          (EXTRACT(EPOCH FROM bucket) * 1000)::float8 AS bucket,
          count(*)::int AS messages,
          count(*) FILTER (WHERE "status" = 'succeeded')::int AS succeeded,
          count(*) FILTER (WHERE "status" = 'failed')::int AS failed,
          COALESCE(sum("modelCalls"), 0)::float8 AS "modelCalls",
          COALESCE(sum("inputTokens"), 0)::float8 AS "inputTokens",
          COALESCE(sum("outputTokens"), 0)::float8 AS "outputTokens",
          sum("cost") AS cost,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY ${DURATION}) FILTER (WHERE "finishedAt" IS NOT NULL) AS p50,
          percentile_cont(0.95) WITHIN GROUP (ORDER BY ${DURATION}) FILTER (WHERE "finishedAt" IS NOT NULL) AS p95
        FROM (SELECT "botId", "pipelineId", "model", "status", "receivedAt", "finishedAt", "modelCalls", "inputTokens", "outputTokens", "cost",
            date_bin(make_interval(secs => $3), "receivedAt", $4::timestamp) AS bucket FROM "QueryRecord"
          WHERE "receivedAt" >= $1::timestamp AND "receivedAt" < $2::timestamp ${filters.sql}) q
        GROUP BY GROUPING SETS ((), ("botId"), ("pipelineId"), ("model"), (bucket))`,
      values: [utc(range.from), utc(range.to), range.bucketSeconds, utc(plan.origin), ...filters.params],
    };
  }
  // $1 from, $2 to, $3 bucket seconds, $4 origin, $5 first whole hour, $6 end of the whole hours.
  const filters = rangeFilters(input, 7);
  const hist = `ARRAY[${DURATION_BOUNDS_MS.concat([Infinity]).map((_, i) => `(COALESCE(sum(bins[${i + 1}]), 0) + COALESCE(sum(w) FILTER (WHERE bin = ${i}), 0))::int`).join(', ')}]`;
  return {
    text: `WITH src (${SOURCE_COLUMNS}) AS (
        SELECT "botId", "pipelineId", "model", "hour", "messages", "succeeded", "failed", "modelCalls", "inputTokens", "outputTokens", "cost", "costed",
          "finished", "durationMs", "durationBins", NULL::int, 0
        FROM "QueryHourlyRollup" WHERE "hour" >= $5::timestamp AND "hour" < $6::timestamp ${filters.sql}
        UNION ALL
        SELECT "botId", "pipelineId", "model", "hour", "sign", "sign" * "succeeded", "sign" * "failed", "sign" * "modelCalls", "sign" * "inputTokens", "sign" * "outputTokens",
          "sign" * COALESCE("cost", 0), CASE WHEN "cost" IS NULL THEN 0 ELSE "sign" END, "sign" * "finished", "sign" * COALESCE("durationMs", 0), NULL::int[], "bin", "sign"
        FROM "QueryRollupDelta" WHERE "hour" >= $5::timestamp AND "hour" < $6::timestamp ${filters.sql}
        UNION ALL
        SELECT "botId", COALESCE("pipelineId", ''), COALESCE("model", ''), "receivedAt", 1, ("status" = 'succeeded')::int, ("status" = 'failed')::int,
          COALESCE("modelCalls", 0), COALESCE("inputTokens", 0), COALESCE("outputTokens", 0), COALESCE("cost", 0), ("cost" IS NOT NULL)::int,
          ("finishedAt" IS NOT NULL)::int, COALESCE(${DURATION}, 0), NULL::int[], "conveyor_duration_bin"(${DURATION}), 1
        FROM "QueryRecord" WHERE (("receivedAt" >= $1::timestamp AND "receivedAt" < $5::timestamp) OR ("receivedAt" >= $6::timestamp AND "receivedAt" < $2::timestamp)) ${filters.sql}
      )
      SELECT GROUPING("botId", "pipelineId", "model", bucket) AS grouping, "botId" AS bot, "pipelineId" AS pipeline, "model",
        (EXTRACT(EPOCH FROM bucket) * 1000)::float8 AS bucket,
        sum(messages)::int AS messages, sum(succeeded)::int AS succeeded, sum(failed)::int AS failed,
        sum("modelCalls")::float8 AS "modelCalls", sum("inputTokens")::float8 AS "inputTokens", sum("outputTokens")::float8 AS "outputTokens",
        CASE WHEN sum(costed) > 0 THEN sum(cost)::float8 END AS cost, ${hist} AS hist
      FROM (SELECT *, date_bin(make_interval(secs => $3), t, $4::timestamp) AS bucket FROM src) q
      GROUP BY GROUPING SETS ((), ("botId"), ("pipelineId"), ("model"), (bucket))`,
    values: [utc(range.from), utc(range.to), range.bucketSeconds, utc(plan.origin), utc(plan.rollup.from), utc(plan.rollup.to), ...filters.params],
  };
}

/**
 * The `p` quantile (0 to 1) of durations counted in bins (DURATION_BOUNDS_MS), the way percentile_cont
 * places it between two order statistics, each estimated at its rank's place inside its bin; the last
 * bin (10 minutes and over) gives its lower bound. The error is at most the width of the bins the two
 * order statistics fall in. Null when nothing was counted.
 */
export function binnedPercentile(hist: readonly number[], p: number): number | null {
  const n = hist.reduce((a, b) => a + b, 0);
  if (n <= 0) return null;
  const rank = p * (n - 1);
  const orderStatistic = (k: number): number => {
    let below = 0;
    for (let i = 0; i < hist.length; i++) {
      const count = hist[i]!;
      if (count > 0 && k < below + count) {
        const lo = i === 0 ? 0 : DURATION_BOUNDS_MS[i - 1]!;
        const hi = DURATION_BOUNDS_MS[i] ?? lo;
        return lo + ((k - below + 0.5) / count) * (hi - lo);
      }
      below += count;
    }
    return DURATION_BOUNDS_MS[DURATION_BOUNDS_MS.length - 1]!;
  };
  const low = Math.floor(rank);
  const lowValue = orderStatistic(low);
  return rank === low ? lowValue : lowValue + (rank - low) * (orderStatistic(low + 1) - lowValue);
}

function totals(row: TotalsRow | undefined): AdminApi.MonitoringSummary['totals'] {
  const p50 = row?.hist ? binnedPercentile(row.hist, 0.5) : row?.p50;
  const p95 = row?.hist ? binnedPercentile(row.hist, 0.95) : row?.p95;
  return {
    messages: row?.messages ?? 0,
    succeeded: row?.succeeded ?? 0,
    failed: row?.failed ?? 0,
    modelCalls: row?.modelCalls ?? 0,
    inputTokens: row?.inputTokens ?? 0,
    outputTokens: row?.outputTokens ?? 0,
    cost: row?.cost ?? null,
    p50Ms: p50 === null || p50 === undefined ? null : Math.round(p50),
    p95Ms: p95 === null || p95 === undefined ? null : Math.round(p95),
  };
}

/** GET /monitoring/summary. Groups are ordered by messages, most first; a null key (no pipeline, no model) is `""`. */
export async function monitoringSummary(pool: pg.Pool, input: AdminApi.MonitoringRangeInput, now = new Date(), options: { rollup?: boolean } = {}): Promise<AdminApi.MonitoringSummary> {
  const range = resolveRange(input, now);
  const { rows } = await pool.query<TotalsRow>(summaryStatement(input, range, options));
  const groups = (bits: number, key: (r: TotalsRow) => string | null) =>
    rows.filter((r) => r.grouping === bits).map((r) => ({ key: key(r) ?? '', ...totals(r) })).sort((a, b) => b.messages - a.messages || a.key.localeCompare(b.key));
  const byBucket = new Map(rows.filter((r) => r.grouping === GROUPED_BY.bucket && r.bucket !== null).map((r) => [r.bucket, r]));
  // Every bucket of the range, the empty ones too, so a chart's time axis is even.
  const series: AdminApi.MonitoringSummary['series'] = [];
  const step = range.bucketSeconds * 1000;
  for (let t = planRange(range).origin.getTime(); t < range.to.getTime() && series.length <= MAX_BUCKETS + 1; t += step) {
    series.push({ start: new Date(t).toISOString(), ...totals(byBucket.get(t)) });
  }
  return {
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    bucketSeconds: range.bucketSeconds,
    totals: totals(rows.find((r) => r.grouping === GROUPED_BY.all)),
    byBot: groups(GROUPED_BY.bot, (r) => r.bot),
    byPipeline: groups(GROUPED_BY.pipeline, (r) => r.pipeline),
    byModel: groups(GROUPED_BY.model, (r) => r.model),
    series,
  };
}

/** GET /monitoring/errors: the query log's failed queries of the range (with their reasons), newest first. */
export function monitoringErrors(prisma: PrismaClient, input: AdminApi.MonitoringErrorFilterInput, now = new Date()) {
  const range = resolveRange(input, now);
  return listQueries(prisma, {
    status: 'failed',
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    limit: input.limit,
    ...(input.botId ? { botId: input.botId } : {}),
    ...(input.cursor ? { cursor: input.cursor } : {}),
  });
}

/** GET /monitoring/sessions: chats whose conversations were active in the range, most recent first. */
export async function monitoringSessions(pool: pg.Pool, input: AdminApi.MonitoringSessionFilterInput, now = new Date()): Promise<z.infer<typeof AdminApi.MonitoringSessionPage>> {
  const range = resolveRange(input, now);
  const offset = input.cursor ? Number(input.cursor) : 0;
  const { rows } = await pool.query<{ botId: string; launcherType: string; launcherId: string; conversations: number; messages: number; last: number }>(
    `SELECT c."botId", c."launcherType", c."launcherId", count(*)::int AS conversations, COALESCE(sum(m.n), 0)::int AS messages, (EXTRACT(EPOCH FROM max(c."updatedAt")) * 1000)::float8 AS last
     FROM "Conversation" c LEFT JOIN LATERAL (SELECT count(*) AS n FROM "ConversationMessage" WHERE "conversationId" = c."id") m ON true
     WHERE c."updatedAt" >= $1::timestamp AND c."updatedAt" < $2::timestamp ${input.botId ? 'AND c."botId" = $5' : ''}
     GROUP BY 1, 2, 3 ORDER BY last DESC, 1, 2, 3 OFFSET $3 LIMIT $4`,
    [utc(range.from), utc(range.to), offset, input.limit + 1, ...(input.botId ? [input.botId] : [])],
  );
  const more = rows.length > input.limit;
  const page = more ? rows.slice(0, input.limit) : rows;
  return {
    items: page.map((r) => ({ botId: r.botId, launcherType: r.launcherType, launcherId: r.launcherId, conversations: r.conversations, messages: r.messages, lastActivityAt: new Date(r.last).toISOString() })),
    nextCursor: more ? String(offset + input.limit) : null,
  };
}

const CONVERSATIONS_SHOWN = 20;
const MESSAGES_SHOWN = 200;

/**
 * GET /monitoring/sessions/conversations: the chat's newest conversations with their messages. What
 * was said is shown only when the operator turned `monitoring.showMessageText` on; otherwise each
 * message keeps its role, time, size and tool names.
 */
export async function sessionConversations(prisma: PrismaClient, chat: { botId: string; launcherType: string; launcherId: string }, showText: boolean): Promise<AdminApi.SessionConversations> {
  const conversations = await prisma.conversation.findMany({
    where: chat,
    orderBy: { createdAt: 'desc' },
    take: CONVERSATIONS_SHOWN,
    include: { messages: { orderBy: { seq: 'asc' }, take: MESSAGES_SHOWN } },
  });
  return {
    textShown: showText,
    conversations: conversations.map((c) => ({
      id: c.id,
      pipelineId: c.pipelineId,
      createdAt: c.createdAt.toISOString(),
      updatedAt: c.updatedAt.toISOString(),
      archivedAt: c.archivedAt?.toISOString() ?? null,
      messages: c.messages.map((m) => {
        const text = messageText({ content: m.content as LlmMessage['content'] });
        const calls = Array.isArray(m.toolCalls) ? m.toolCalls : [];
        return {
          seq: m.seq,
          role: m.role,
          at: m.createdAt.toISOString(),
          chars: text.length,
          text: showText ? text : null,
          toolCalls: calls.map((call) => toolName(call)).filter((n): n is string => n !== null),
        };
      }),
    })),
  };
}

/** The stored shapes read back: a tool call's function name, a timeline's steps (anything else is left out). */
const StoredToolCall = z.object({ function: z.object({ name: z.string() }) });
const StoredStep = z.object({ stage: z.string(), at: z.number(), ms: z.number() });

function toolName(call: unknown): string | null {
  const parsed = StoredToolCall.safeParse(call);
  return parsed.success ? parsed.data.function.name : null;
}

/**
 * GET /queries/:id/timeline: the wait before the orchestrator took the query, its stages and the run,
 * each as an offset from the message's arrival, in the order they started.
 */
export async function queryTimeline(prisma: PrismaClient, id: string): Promise<AdminApi.QueryTimeline> {
  const entry = await getQuery(prisma, id);
  const row = await prisma.queryRecord.findUniqueOrThrow({ where: { id }, select: { stages: true } });
  const received = Date.parse(entry.receivedAt);
  const steps: AdminApi.QueryTimeline['steps'] = [];
  if (entry.startedAt) steps.push({ stage: 'queued', offsetMs: 0, ms: Math.max(0, Date.parse(entry.startedAt) - received) });
  const recorded = Array.isArray(row.stages) ? row.stages : [];
  for (const s of recorded) {
    const step = StoredStep.safeParse(s);
    if (step.success) steps.push({ stage: step.data.stage, offsetMs: step.data.at - received, ms: step.data.ms });
  }
  steps.sort((a, b) => a.offsetMs - b.offsetMs);
  return {
    id,
    receivedAt: entry.receivedAt,
    finishedAt: entry.finishedAt,
    totalMs: entry.finishedAt ? Date.parse(entry.finishedAt) - received : null,
    steps,
  };
}

/** Rows one CSV export holds at most; a longer range is cut there (the last line says so). */
export const MAX_EXPORT_ROWS = 500_000;
const EXPORT_BATCH = 2_000;
const CSV_COLUMNS = ['id', 'receivedAt', 'finishedAt', 'status', 'botId', 'pipelineId', 'launcherType', 'launcherId', 'model', 'runner', 'modelCalls', 'inputTokens', 'outputTokens', 'cost', 'durationMs', 'error'] as const;

/** One CSV field (RFC 4180); a text a spreadsheet would run as a formula gets a leading quote. */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * GET /monitoring/queries.csv: the range's query log as CSV, oldest first, read in keyset batches so
 * memory stays bounded however long the range; at most MAX_EXPORT_ROWS rows.
 */
export async function* queryLogCsv(pool: pg.Pool, input: AdminApi.MonitoringRangeInput, now = new Date(), maxRows = MAX_EXPORT_ROWS): AsyncGenerator<string> {
  const range = resolveRange(input, now);
  const filters = rangeFilters(input, 3);
  yield `${CSV_COLUMNS.join(',')}\r\n`;
  let after: { at: string; id: string } | null = null;
  let written = 0;
  while (written < maxRows) {
    const result: pg.QueryResult<Record<(typeof CSV_COLUMNS)[number], string | number | null>> = await pool.query(
      `SELECT "id", to_char("receivedAt", 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "receivedAt", to_char("finishedAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "finishedAt",
         "status", "botId", "pipelineId", "launcherType", "launcherId", "model", "runner", "modelCalls", "inputTokens", "outputTokens", "cost",
         round(EXTRACT(EPOCH FROM ("finishedAt" - "receivedAt")) * 1000)::float8 AS "durationMs", "error"
       FROM "QueryRecord" WHERE "receivedAt" >= $1::timestamp AND "receivedAt" < $2::timestamp ${filters.sql}
         ${after ? `AND ("receivedAt", "id") > ($${filters.params.length + 3}::timestamp, $${filters.params.length + 4})` : ''}
       ORDER BY "receivedAt", "id" LIMIT ${Math.min(EXPORT_BATCH, maxRows - written)}`,
      [utc(range.from), utc(range.to), ...filters.params, ...(after ? [after.at, after.id] : [])],
    );
    const rows = result.rows;
    if (rows.length === 0) return;
    yield rows.map((r) => `${CSV_COLUMNS.map((c) => csvField(r[c])).join(',')}\r\n`).join('');
    written += rows.length;
    const last: Record<string, string | number | null> = rows[rows.length - 1]!;
    after = { at: String(last.receivedAt), id: String(last.id) };
    if (rows.length < EXPORT_BATCH) return;
  }
  yield `# cut at ${maxRows} rows; export a shorter range for the rest\r\n`;
}

/** The session filter's chat, for a route that names one in its query. */
export function chatOf(input: z.infer<typeof AdminApi.SessionConversationsFilter>) {
  return { botId: input.botId, launcherType: input.launcherType, launcherId: input.launcherId };
}

