import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { metrics, type Counter } from '@opentelemetry/api';

/**
 * What the retention pruner deletes. `message` counts the conversation messages removed with their
 * expired conversations; `dead_letter` is a store outside Postgres (JetStream), pruned through
 * `RetentionPrunerOptions.deadLetters`. `rollup` is the query log's hourly rollup, kept by its own age
 * (usually longer than the raw records, so a dashboard's long range outlives them).
 */
export const RETENTION_KINDS = ['query', 'rollup', 'message', 'conversation', 'audit', 'dead_letter'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** Age limits in days; 0 keeps that kind forever. */
export interface RetentionPolicy {
  queryDays: number;
  /** The hourly rollup of the query log (QueryHourlyRollup), by its hour. */
  rollupDays: number;
  conversationDays: number;
  auditDays: number;
  deadLetterDays: number;
}

/** Deletes at most `limit` entries older than `cutoff` and says how many it deleted. */
export type PruneBatch = (cutoff: Date, limit: number) => Promise<number>;

export interface RetentionPrunerOptions {
  /** Rows one statement deletes at most (one transaction each). */
  batchSize: number;
  /** Pause between two batches, so the message path's statements and locks come first. */
  pauseMs: number;
  /** Batches one run may take per kind; what is left waits for the next run. */
  maxBatchesPerKind: number;
  /** Dead letters, which live in JetStream. */
  deadLetters?: PruneBatch;
  now?: () => Date;
}

export interface RetentionSummary {
  pruned: Record<RetentionKind, number>;
  /** Batch transactions that ran (each deleted up to batchSize rows of one kind). */
  batches: number;
  /** True when another process held the pruning lock: this run stopped there and left the rest to it. */
  contended: boolean;
  /** Kinds with rows past their age still left (the run reached maxBatchesPerKind). */
  unfinished: RetentionKind[];
  durationMs: number;
}

/**
 * Two admin replicas must not prune at once. The lock is transaction-scoped and taken for every
 * batch: behind a transaction-pooling PgBouncer a session lock could be held on a server connection
 * that other clients then use. The pair of keys is this concept's alone in the database (Prisma
 * Migrate's lock uses the single-key form).
 */
export const RETENTION_LOCK_KEYS: readonly [number, number] = [0x636f6e76 /* "conv" */, 1];

const DAY_MS = 86_400_000;

/** `timestamp without time zone` columns hold UTC (Prisma's convention); the cutoff is passed as such. */
const utc = (d: Date) => d.toISOString();

/**
 * A conversation is expired when its last turn (updatedAt) is older than the age and no query of its
 * chat is still in flight: a run that loaded an idle conversation appends to it when it finishes, and
 * an append to a deleted conversation would fail its whole group of turns.
 */
const EXPIRED_CONVERSATION = `c."updatedAt" < $1::timestamp AND NOT EXISTS (
  SELECT 1 FROM "QueryRecord" q WHERE q."status" IN ('accepted', 'running')
    AND q."botId" = c."botId" AND q."launcherType" = c."launcherType" AND q."launcherId" = c."launcherId")`;

/** Each statement deletes at most $2 rows past the cutoff $1, oldest first by the indexed age column. */
const STATEMENTS = {
  query: `DELETE FROM "QueryRecord" WHERE "id" IN (
      SELECT "id" FROM "QueryRecord" WHERE "receivedAt" < $1::timestamp ORDER BY "receivedAt" LIMIT $2)`,
  rollup: `DELETE FROM "QueryHourlyRollup" WHERE ctid IN (
      SELECT ctid FROM "QueryHourlyRollup" WHERE "hour" < $1::timestamp ORDER BY "hour" LIMIT $2)`,
  // Messages first, in bounded batches (one long conversation can hold thousands); the conversation
  // row goes once it has none left, so the cascade deletes nothing the batch did not count.
  message: `DELETE FROM "ConversationMessage" WHERE "id" IN (
      SELECT m."id" FROM "Conversation" c JOIN "ConversationMessage" m ON m."conversationId" = c."id"
      WHERE ${EXPIRED_CONVERSATION} LIMIT $2)`,
  conversation: `DELETE FROM "Conversation" WHERE "id" IN (
      SELECT c."id" FROM "Conversation" c WHERE ${EXPIRED_CONVERSATION}
        AND NOT EXISTS (SELECT 1 FROM "ConversationMessage" m WHERE m."conversationId" = c."id")
      ORDER BY c."updatedAt" LIMIT $2)`,
  audit: `DELETE FROM "AuditEntry" WHERE "id" IN (
      SELECT "id" FROM "AuditEntry" WHERE "at" < $1::timestamp ORDER BY "at" LIMIT $2)`,
} as const satisfies Partial<Record<RetentionKind, string>>;

let prunedCounter: Counter | undefined;
function pruned(): Counter {
  prunedCounter ??= metrics.getMeter('@conveyor/persistence').createCounter('conveyor_retention_pruned', {
    description: 'Rows and entries the retention pruner deleted for being older than their age setting, by kind',
  });
  return prunedCounter;
}

/**
 * Deletes query records, conversations (with their messages), audit entries and dead letters older
 * than their age settings, in bounded batches: one transaction per batch of at most `batchSize` rows,
 * found through an index on the age column, with a pause between batches, so the message path never
 * waits behind a long delete. Runs until each kind is done or has taken `maxBatchesPerKind` batches.
 */
export class RetentionPruner {
  constructor(
    private readonly pool: pg.Pool,
    private readonly policy: RetentionPolicy,
    private readonly options: RetentionPrunerOptions,
  ) {
    if (!(options.batchSize >= 1) || !(options.maxBatchesPerKind >= 1)) throw new Error('retention batchSize and maxBatchesPerKind must be at least 1');
  }

  async run(signal?: AbortSignal): Promise<RetentionSummary> {
    const started = Date.now();
    const now = (this.options.now ?? (() => new Date()))();
    const summary: RetentionSummary = { pruned: { query: 0, rollup: 0, message: 0, conversation: 0, audit: 0, dead_letter: 0 }, batches: 0, contended: false, unfinished: [], durationMs: 0 };
    const cutoff = (days: number) => new Date(now.getTime() - days * DAY_MS);
    const plan: [RetentionKind, number, PruneBatch | undefined][] = [
      ['query', this.policy.queryDays, undefined],
      ['rollup', this.policy.rollupDays, undefined],
      ['message', this.policy.conversationDays, undefined],
      ['conversation', this.policy.conversationDays, undefined],
      ['audit', this.policy.auditDays, undefined],
      ['dead_letter', this.policy.deadLetterDays, this.options.deadLetters],
    ];
    for (const [kind, days, external] of plan) {
      if (days <= 0 || summary.contended || signal?.aborted) continue;
      if (kind === 'dead_letter' && !external) continue;
      const statement = kind === 'dead_letter' ? undefined : STATEMENTS[kind];
      const before = cutoff(days);
      for (let batch = 0; ; batch++) {
        if (batch >= this.options.maxBatchesPerKind) {
          summary.unfinished.push(kind);
          break;
        }
        // Resolves early (rejecting, then caught) when the run is aborted.
        if (batch > 0 && this.options.pauseMs > 0) await sleep(this.options.pauseMs, undefined, { signal }).catch(() => undefined);
        if (signal?.aborted) break;
        const deleted = await this.locked(async (client) => {
          if (statement) return (await client.query(statement, [utc(before), this.options.batchSize])).rowCount ?? 0;
          return external!(before, this.options.batchSize);
        });
        if (deleted === null) {
          summary.contended = true;
          break;
        }
        summary.batches++;
        if (deleted > 0) {
          summary.pruned[kind] += deleted;
          pruned().add(deleted, { kind });
        }
        if (deleted < this.options.batchSize) break;
      }
    }
    summary.durationMs = Date.now() - started;
    return summary;
  }

  /** One batch in its own transaction under the pruning lock; null when another process holds it. */
  private async locked(batch: (client: pg.PoolClient) => Promise<number>): Promise<number | null> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2) AS locked', [...RETENTION_LOCK_KEYS]);
      if (!rows[0]?.locked) {
        await client.query('ROLLBACK');
        return null;
      }
      const deleted = await batch(client);
      await client.query('COMMIT');
      return deleted;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}
