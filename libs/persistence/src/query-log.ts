import { context, metrics, trace, TraceFlags, type Counter } from '@opentelemetry/api';
import { storableEventBody, storableText, type RunnerEventBody } from '@conveyor/contracts';
import { isDatabaseUnavailable, isDataError, isTransactionConflict } from './database.js';
import { GroupCommit } from './group-commit.js';
import type { SqlStatements } from './prepared-statements.js';

export interface QueryStart {
  id: string;
  botId: string;
  pipelineId: string | null;
  launcherType: string;
  launcherId: string;
  receivedAt: Date;
  traceId?: string;
  /** Whether that trace is sampled: only then does the tracing backend get it, and a link can open it. */
  traceSampled?: boolean;
  attempt: number;
}

/**
 * The active span's trace as the query log records it: its id, and whether it is sampled (its trace
 * flags). An unsampled trace still has an id (log lines carry it), but no backend ever receives it.
 */
export function activeTrace(): Pick<QueryStart, 'traceId' | 'traceSampled'> {
  const span = trace.getSpan(context.active())?.spanContext();
  if (!span || /^0+$/.test(span.traceId)) return {};
  return { traceId: span.traceId, traceSampled: (span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED };
}

const MAX_ERROR_CHARS = 4000;

/** Ids and names may come from anywhere on the bus; one value Postgres refuses fails the whole group. */
function storableStart(q: QueryStart): QueryStart {
  return {
    ...q,
    botId: storableText(q.botId),
    pipelineId: q.pipelineId === null ? null : storableText(q.pipelineId),
    launcherType: storableText(q.launcherType),
    launcherId: storableText(q.launcherId),
  };
}

/**
 * A run's last event as its finishing attempt numbered it, and its body when that event carries the
 * answer (a final chunk or message marked `last`); without a body, the last event is a bare `done`.
 */
export interface DoneEvent {
  attempt: number;
  seq: number;
  event?: RunnerEventBody;
}

/** How a query ended, as far as the log knows; `done` when the run recorded its last event's number. */
export interface FinishedQuery {
  status: 'succeeded' | 'failed';
  done: DoneEvent | null;
}

/** One step of a query's timeline: `at` is when it started (Unix time in milliseconds), `ms` how long it took. */
export interface StageTiming {
  stage: string;
  at: number;
  ms: number;
}

/** What the runner knows when a run ends: the runner, the model that answered, its calls, tokens and cost, and the run's timing. */
export interface RunUsage {
  runner: string;
  model: string | null;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  cost: number | null;
  timing?: StageTiming;
  /** Steps inside the run shown on the query's timeline after it (each sandbox `exec`). */
  steps?: StageTiming[];
}

/** Timelines are bounded: a pipeline has a handful of stages; anything past this is dropped. */
export const MAX_TIMELINE_ENTRIES = 32;

/** The run's columns as the statements read them (jsonb_to_recordset), or nulls without a run. */
export function usageColumns(run: RunUsage | undefined) {
  return {
    runner: run ? storableText(run.runner) : null,
    model: run?.model ? storableText(run.model) : null,
    modelCalls: run?.modelCalls ?? null,
    inputTokens: run?.inputTokens ?? null,
    outputTokens: run?.outputTokens ?? null,
    cost: run?.cost ?? null,
    stages: run?.timing ? [run.timing, ...(run.steps ?? [])].slice(0, MAX_TIMELINE_ENTRIES).map((t) => ({ ...t, stage: storableText(t.stage) })) : null,
  };
}

export type UsageColumns = ReturnType<typeof usageColumns>;

/**
 * The stored timeline `existing` with the steps `incoming` merged in: a step replaces the stored ones
 * of the same stage name, so a redelivered query (a crash mid-flight, JetStream delivering it again)
 * that records its stages, run or delivery again shows each once, as its latest attempt timed it.
 * Steps of one write keep each other (a stage that ran twice in one attempt shows twice).
 */
export const mergeSteps = (existing: string, incoming: string) => `(COALESCE((SELECT jsonb_agg(s.e ORDER BY s.n)
    FROM jsonb_array_elements(COALESCE(${existing}, '[]'::jsonb)) WITH ORDINALITY AS s(e, n)
    WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(${incoming}) AS i(x) WHERE i.x->>'stage' = s.e->>'stage')), '[]'::jsonb) || ${incoming})`;

/** The same merge of steps already in memory (two writes of one query in one group commit). */
export function mergeStepList(existing: readonly StageTiming[], incoming: readonly StageTiming[]): StageTiming[] {
  const replaced = new Set(incoming.map((t) => t.stage));
  return [...existing.filter((t) => !replaced.has(t.stage)), ...incoming].slice(0, MAX_TIMELINE_ENTRIES);
}

/** The SET clauses that write usageColumns from `r` into the record `q`; the stages are merged (mergeSteps). */
export const USAGE_SET = `"runner" = COALESCE(r."runner", q."runner"), "model" = COALESCE(r."model", q."model"),
  "modelCalls" = COALESCE(r."modelCalls", q."modelCalls"), "inputTokens" = COALESCE(r."inputTokens", q."inputTokens"),
  "outputTokens" = COALESCE(r."outputTokens", q."outputTokens"), "cost" = COALESCE(r."cost", q."cost"),
  "stages" = CASE WHEN r."stages" IS NULL THEN q."stages" ELSE ${mergeSteps('q."stages"', 'r."stages"')} END`;
export const USAGE_RECORD = `"runner" text, "model" text, "modelCalls" int, "inputTokens" int, "outputTokens" int, "cost" float8, "stages" jsonb`;

/**
 * Statements that write several QueryRecord rows take the rows' locks in id order. Two statements that
 * lock the same rows in different orders deadlock, and Postgres breaks a deadlock only after
 * `deadlock_timeout` (a second by default) by failing one of them: a group of log entries lost, or every
 * reply's history write held for that second. An INSERT … SELECT locks in its SELECT's order (`ORDER BY
 * "id"`); an UPDATE … FROM locks in whatever order its plan reads the table, so this one first locks its
 * rows in id order (`locked`), and updates only those.
 */
function updateRecordsInIdOrder(recordset: string, set: string, where = 'TRUE'): string {
  // `= ANY (ARRAY(…))` rather than a join or `IN`: the planner cannot tell how many rows the recordset
  // holds and would read the whole table to hash-join a few of them; an array of ids is looked up in the
  // primary key. The array of locked ids is built before the update reads a row, so every lock is taken
  // first, in order.
  return `WITH "input" AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(${recordset})),
    "locked" AS MATERIALIZED (SELECT "id" FROM "QueryRecord" WHERE "id" = ANY (ARRAY(SELECT "id" FROM "input")) ORDER BY "id" FOR UPDATE)
    UPDATE "QueryRecord" AS q SET ${set}
    FROM "input" AS r WHERE q."id" = r."id" AND q."id" = ANY (ARRAY(SELECT "id" FROM "locked")) AND (${where})`;
}

/** The group commit's updates, built once: a query's attempt raised, its timeline merged, its end. */
const RAISE_ATTEMPTS = updateRecordsInIdOrder('"id" text, "attempt" int', '"attempt" = GREATEST(q."attempt", r."attempt")');
const MERGE_TIMELINES = updateRecordsInIdOrder('"id" text, "stages" jsonb', `"stages" = ${mergeSteps('q."stages"', 'r."stages"')}`);
const END_QUERIES = updateRecordsInIdOrder(
  `"id" text, "status" text, "error" text, "finishedAt" timestamp, "doneAttempt" int, "doneSeq" int, "doneEvent" jsonb, ${USAGE_RECORD}`,
  `"status" = r."status", "error" = r."error", "finishedAt" = r."finishedAt",
   "doneAttempt" = COALESCE(r."doneAttempt", q."doneAttempt"), "doneSeq" = COALESCE(r."doneSeq", q."doneSeq"),
   "doneEvent" = CASE WHEN r."doneSeq" IS NULL THEN q."doneEvent" ELSE r."doneEvent" END, ${USAGE_SET}`,
  `r."status" = 'failed' OR q."status" <> 'failed'`,
);

/**
 * A start written with the orchestrator's `succeeded` (EXCLUDED."finishedAt" set) onto a record that is
 * already there: what END_QUERIES would do with that success, a failure staying failed. A start alone
 * leaves the status as it is.
 */
const FOLDED_SUCCESS = ['status', 'finishedAt', 'error']
  .map((c) => `"${c}" = CASE WHEN EXCLUDED."finishedAt" IS NULL OR "QueryRecord"."status" = 'failed' THEN "QueryRecord"."${c}" ELSE ${c === 'error' ? 'NULL' : `EXCLUDED."${c}"`} END`)
  .join(', ');

/**
 * How long a group of log writes the database could not take (a restart, a lock conflict) keeps being
 * tried again before its entries are reported lost. Later groups wait behind it, bounded by the group
 * commit's pending limit.
 */
export const QUERY_LOG_RETRY_MS = 10_000;

let retriedGroupsCounter: Counter | undefined;
function retriedGroups(): Counter {
  retriedGroupsCounter ??= metrics.getMeter('@conveyor/persistence').createCounter('conveyor_query_log_retries', {
    description: 'Query log groups written again after the database refused them for the moment, by reason',
  });
  return retriedGroupsCounter;
}

/**
 * How long a group of log writes collects before it is written: long enough that a query's start and
 * the timing of its stages, which the orchestrator logs a few milliseconds apart, usually share a group
 * and are written as one row version.
 */
export const QUERY_LOG_GROUP_MS = 50;

type LogWrite =
  | { kind: 'running'; q: QueryStart; at: Date }
  | { kind: 'failed'; id: string; error: string; at: Date; done: DoneEvent | null; run?: RunUsage }
  | { kind: 'timeline'; id: string; stages: StageTiming[] }
  | { kind: 'succeeded'; id: string; at: Date }
  | { kind: 'attempt'; id: string; attempt: number }
  | { kind: 'merged'; q: QueryStart; into: string; at: Date };

function queryIdOf(w: LogWrite): string {
  return w.kind === 'running' || w.kind === 'merged' ? w.q.id : w.id;
}

/**
 * The query log (QueryRecord): what happened to each accepted message, for operators and users' support.
 *
 * Writes are group-committed (QUERY_LOG_GROUP_MS, then one statement per kind for the whole group) and
 * the callers do not wait for them; a group the database refuses for the moment is written again for up
 * to QUERY_LOG_RETRY_MS, and one refused for a value it carries is split until only the entries with
 * that value are left out. Durability contract: a process killed within that window loses its
 * last log entries (a query may then show `running`, or be missing, until a later write of the same
 * query). No reply and no history depend on the log: the history append (ConversationStore.completeTurn)
 * creates the record itself when it is not there yet, and a status never goes back from
 * `succeeded`/`failed` to `running`.
 */
export class QueryLog {
  private readonly writer: GroupCommit<LogWrite>;

  /**
   * `sql`: the database's prepared statements (`Database.statements`), or a pool. `onError` is told
   * which queries' entries were not written, and why.
   */
  constructor(
    private readonly sql: SqlStatements,
    onError: (err: unknown, queryIds: string[]) => void = () => undefined,
  ) {
    this.writer = new GroupCommit<LogWrite>({
      delayMs: QUERY_LOG_GROUP_MS,
      write: (items) => this.write(items),
      onError: (err, items) => onError(err, [...new Set(items.map(queryIdOf))]),
      // Every statement of a group can run twice (the inserts and updates converge on the same rows),
      // so a group the database could not take just then is written again, whole, and a group refused
      // for a value one of its entries carries is written again in parts, losing only that entry.
      retryable: (err) => isDatabaseUnavailable(err) || isTransactionConflict(err),
      isolatable: isDataError,
      retryForMs: QUERY_LOG_RETRY_MS,
      onRetry: (err) => retriedGroups().add(1, { reason: isTransactionConflict(err) ? 'conflict' : 'unavailable' }),
    });
  }

  /** A redelivered query starts again: the newest attempt wins, a finished query stays finished. */
  running(q: QueryStart): void {
    this.writer.add({ kind: 'running', q: storableStart(q), at: new Date() });
  }

  /**
   * `done`: the number the run's last event will have, so a redelivered copy can publish it again;
   * `run`: what the runner knows of the run (model, tokens, cost, timing), written with the failure.
   */
  failed(id: string, error: string, done: DoneEvent | null = null, run?: RunUsage): void {
    // Errors quote what failed (a model provider's body can hold NUL); cut first, so half a surrogate pair is replaced too.
    this.writer.add({ kind: 'failed', id, error: storableText(error.slice(0, MAX_ERROR_CHARS)), at: new Date(), done, ...(run ? { run } : {}) });
  }

  /**
   * Adds steps to the query's timeline (the orchestrator's stages, the dispatcher's deliveries), in the
   * same group commit as its other entries; a step replaces a stored one of its stage name (mergeSteps).
   */
  timeline(id: string, stages: StageTiming[]): void {
    if (stages.length === 0) return;
    this.writer.add({ kind: 'timeline', id, stages: stages.slice(0, MAX_TIMELINE_ENTRIES).map((t) => ({ ...t, stage: storableText(t.stage) })) });
  }

  /** The runner started the query's run again (a redelivery): the record shows the newest attempt. */
  attempt(id: string, attempt: number): void {
    this.writer.add({ kind: 'attempt', id, attempt });
  }

  succeeded(id: string): void {
    this.writer.add({ kind: 'succeeded', id, at: new Date() });
  }

  /**
   * Message aggregation merged this message into query `into`, which answers it: the message is
   * `succeeded` with `mergedInto` set (written whole, as its own `running` entry may not be in yet).
   */
  merged(q: QueryStart, into: string): void {
    this.writer.add({ kind: 'merged', q: storableStart(q), into, at: new Date() });
  }

  /** Whether the query already ended (a redelivered copy of it must not run again). */
  async isFinished(id: string): Promise<boolean> {
    return (await this.finished(id)) !== null;
  }

  /** How the query ended, or null while it has not. */
  async finished(id: string): Promise<FinishedQuery | null> {
    const { rows } = await this.sql.query<{ status: string; doneAttempt: number | null; doneSeq: number | null; doneEvent: RunnerEventBody | null }>(
      'SELECT "status", "doneAttempt", "doneSeq", "doneEvent" FROM "QueryRecord" WHERE "id" = $1',
      [id],
    );
    const row = rows[0];
    if (!row || (row.status !== 'succeeded' && row.status !== 'failed')) return null;
    const done =
      row.doneAttempt !== null && row.doneSeq !== null
        ? { attempt: row.doneAttempt, seq: row.doneSeq, ...(row.doneEvent ? { event: row.doneEvent } : {}) }
        : null;
    return { status: row.status, done };
  }

  /**
   * Whether the query's run ended for good at least `agoMs` ago: its turn was recorded with the run's
   * last event, or the query failed. False while it runs, when it never ran, or when it was answered
   * before any run (commands), whose end only Redis knows.
   */
  async runEndedBefore(id: string, agoMs: number): Promise<boolean> {
    const { rows } = await this.sql.query<{ ended: boolean }>(
      `SELECT ("status" = 'failed' OR ("status" = 'succeeded' AND "doneAttempt" IS NOT NULL))
          AND "finishedAt" < now() - make_interval(secs => $2::double precision / 1000) AS "ended"
        FROM "QueryRecord" WHERE "id" = $1`,
      [id, agoMs],
    );
    return rows[0]?.ended === true;
  }

  /** Resolves once every entry logged so far is written (shutdown, tests). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  private async write(items: LogWrite[]): Promise<void> {
    const starts = new Map<string, { q: QueryStart; at: Date }>();
    const ends = new Map<string, { status: 'failed' | 'succeeded'; error: string | null; at: Date; done: DoneEvent | null; run?: RunUsage }>();
    const timelines = new Map<string, StageTiming[]>();
    const merged = new Map<string, { q: QueryStart; into: string; at: Date }>();
    const attempts = new Map<string, number>();
    for (const w of items) {
      if (w.kind === 'running') starts.set(w.q.id, { q: w.q, at: w.at });
      else if (w.kind === 'merged') merged.set(w.q.id, { q: w.q, into: w.into, at: w.at });
      // A failure is final; success only where nothing failed (the same rule as the statement below).
      else if (w.kind === 'attempt') attempts.set(w.id, Math.max(attempts.get(w.id) ?? 0, w.attempt));
      else if (w.kind === 'timeline') timelines.set(w.id, mergeStepList(timelines.get(w.id) ?? [], w.stages));
      else if (w.kind === 'failed') ends.set(w.id, { status: 'failed', error: w.error, at: w.at, done: w.done, ...(w.run ? { run: w.run } : {}) });
      else if (ends.get(w.id)?.status !== 'failed') ends.set(w.id, { status: 'succeeded', error: null, at: w.at, done: null });
    }
    if (starts.size) {
      // A query whose stages ended within the group (the orchestrator's start and timeline) is written
      // once, its timeline with its start: one row version instead of an insert and an update. A record
      // the run's end created first (a quick reply can finish within the group's wait) gets the start's
      // arrival and start times: the envelope's arrival, not the time the run's end was written.
      // So is a query the orchestrator handed over within the group (it is `succeeded` from then on):
      // written with its end, it is one row version (and one rollup delta) where an insert and an
      // update made two, and the update rewrote every index of the row.
      const rows = [...starts.values()].map(({ q, at }) => {
        const stages = timelines.get(q.id) ?? null;
        timelines.delete(q.id);
        const end = ends.get(q.id);
        const ended = end?.status === 'succeeded' && end.done === null && end.run === undefined ? end.at : null;
        if (ended) ends.delete(q.id);
        return { ...q, traceId: q.traceId ?? null, traceSampled: q.traceSampled ?? null, startedAt: at, stages, finishedAt: ended };
      });
      await this.sql.query(
        `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "receivedAt", "traceId", "traceSampled", "attempt", "status", "startedAt", "finishedAt", "stages")
         SELECT r."id", r."botId", r."pipelineId", r."launcherType", r."launcherId", r."receivedAt", r."traceId", r."traceSampled", r."attempt",
           CASE WHEN r."finishedAt" IS NULL THEN 'running' ELSE 'succeeded' END, r."startedAt", r."finishedAt", r."stages"
         FROM jsonb_to_recordset($1::jsonb) AS r("id" text, "botId" text, "pipelineId" text, "launcherType" text, "launcherId" text,
           "receivedAt" timestamp, "traceId" text, "traceSampled" boolean, "attempt" int, "startedAt" timestamp, "finishedAt" timestamp, "stages" jsonb)
         ORDER BY r."id"
         ON CONFLICT ("id") DO UPDATE SET "attempt" = GREATEST("QueryRecord"."attempt", EXCLUDED."attempt"),
           ${FOLDED_SUCCESS},
           "traceId" = EXCLUDED."traceId", "traceSampled" = EXCLUDED."traceSampled", "pipelineId" = EXCLUDED."pipelineId",
           "receivedAt" = EXCLUDED."receivedAt", "startedAt" = COALESCE("QueryRecord"."startedAt", EXCLUDED."startedAt"),
           "stages" = CASE WHEN EXCLUDED."stages" IS NULL THEN "QueryRecord"."stages" ELSE ${mergeSteps('"QueryRecord"."stages"', 'EXCLUDED."stages"')} END`,
        [JSON.stringify(rows)],
      );
    }
    if (attempts.size) {
      const rows = [...attempts].map(([id, attempt]) => ({ id, attempt }));
      await this.sql.query(
        RAISE_ATTEMPTS,
        [JSON.stringify(rows)],
      );
    }
    if (timelines.size) {
      const rows = [...timelines].map(([id, stages]) => ({ id, stages }));
      await this.sql.query(
        MERGE_TIMELINES,
        [JSON.stringify(rows)],
      );
    }
    if (merged.size) {
      const rows = [...merged.values()].map(({ q, into, at }) => ({ ...q, traceId: q.traceId ?? null, traceSampled: q.traceSampled ?? null, mergedInto: into, finishedAt: at }));
      await this.sql.query(
        `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "receivedAt", "traceId", "traceSampled", "attempt", "status", "startedAt", "finishedAt", "mergedInto")
         SELECT r."id", r."botId", r."pipelineId", r."launcherType", r."launcherId", r."receivedAt", r."traceId", r."traceSampled", r."attempt", 'succeeded', r."finishedAt", r."finishedAt", r."mergedInto"
         FROM jsonb_to_recordset($1::jsonb) AS r("id" text, "botId" text, "pipelineId" text, "launcherType" text, "launcherId" text,
           "receivedAt" timestamp, "traceId" text, "traceSampled" boolean, "attempt" int, "finishedAt" timestamp, "mergedInto" text)
         ORDER BY r."id"
         ON CONFLICT ("id") DO UPDATE SET "status" = 'succeeded', "mergedInto" = EXCLUDED."mergedInto",
           "finishedAt" = COALESCE("QueryRecord"."finishedAt", EXCLUDED."finishedAt")`,
        [JSON.stringify(rows)],
      );
    }
    if (ends.size) {
      const rows = [...ends].map(([id, e]) => ({ id, status: e.status, error: e.error, finishedAt: e.at, doneAttempt: e.done?.attempt ?? null, doneSeq: e.done?.seq ?? null, doneEvent: e.done?.event ? storableEventBody(e.done.event) : null, ...usageColumns(e.run) }));
      await this.sql.query(
        END_QUERIES,
        [JSON.stringify(rows)],
      );
    }
  }
}
