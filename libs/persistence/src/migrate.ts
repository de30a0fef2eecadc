// Applies Prisma-format migrations with `pg`, keeping Prisma's `_prisma_migrations` ledger exactly
// as `prisma migrate deploy` does (prisma-engines schema-engine: apply_migrations.rs,
// sql_migration_persistence.rs, flavour/postgres.rs), so either tool can take over from the other.
// Differences, on purpose: each migration runs in one transaction together with its ledger row,
// an applied migration whose file changed stops the run (deploy does not compare checksums), and the
// migration lock is transaction-scoped, taken for each migration's transaction, so the runner works
// through a transaction-pooling PgBouncer.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { scriptMatchesChecksum, migrationChecksum } from './checksum.js';
import { MigrationError } from './migration-error.js';
import { readMigrations, resolveMigrationsDir, type LocalMigration } from './migrations-dir.js';

export { MigrationError };

/** Prisma Migrate's advisory lock key: holding the same one also keeps `prisma migrate deploy` out. */
export const PRISMA_MIGRATE_LOCK_KEY = 72707369;

/** The DDL of flavour/postgres.rs::create_migrations_table, verbatim. */
const CREATE_LEDGER_SQL = `CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
);
`;

export interface MigrateOptions {
  databaseUrl: string;
  /** Defaults to CONVEYOR_MIGRATIONS_DIR, then the `prisma/migrations` folder above this module. */
  migrationsDir?: string;
  /** How long to wait for another starter's migration run; default 60 s. */
  lockTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface MigrateResult {
  migrationsDir: string;
  /** Migrations this run applied, in order. */
  applied: string[];
  /** Migrations that were applied before this run. */
  alreadyApplied: string[];
}

interface LedgerRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  started_at: Date;
  logs: string | null;
}

export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const migrationsDir = resolveMigrationsDir(options.migrationsDir);
  const local = readMigrations(migrationsDir);
  const log = options.log ?? (() => {});
  const lockTimeoutMs = options.lockTimeoutMs ?? 60_000;
  const client = new pg.Client({ connectionString: options.databaseUrl });
  await client.connect();
  try {
    const pending = await locked(client, lockTimeoutMs, async () => {
      await ensureLedger(client);
      const applied = await readLedger(client, migrationsDir, local);
      const appliedNames = new Set(applied.map((row) => row.migration_name));
      return local.filter((m) => !appliedNames.has(m.name));
    });
    const pendingNames = new Set(pending.map((m) => m.name));
    const result: MigrateResult = { migrationsDir, applied: [], alreadyApplied: local.filter((m) => !pendingNames.has(m.name)).map((m) => m.name) };
    for (const migration of pending) {
      // Each migration takes the lock again and rereads the ledger under it: another runner may
      // have applied it since the first look.
      const outcome = await applyOne(client, migration, lockTimeoutMs, migrationsDir, local, () => log(`applying ${migration.name}`));
      (outcome === 'applied' ? result.applied : result.alreadyApplied).push(migration.name);
    }
    return result;
  } finally {
    await client.end();
  }
}

/**
 * Runs `fn` in a transaction holding Prisma Migrate's advisory lock. The lock is transaction-scoped
 * (pg_try_advisory_xact_lock), not a session lock: behind a transaction-pooling PgBouncer every
 * statement outside a transaction may run on another server connection, so a session lock would be
 * taken on one, released (or not) on another, and left on a pooled connection that a second runner
 * then reuses, "acquiring" it too. It still excludes `prisma migrate deploy`, which holds the same
 * key as a session lock. Polled rather than blocking, so the wait has a deadline and a clear error.
 */
async function locked<T>(client: pg.Client, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  await client.query('BEGIN');
  try {
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [PRISMA_MIGRATE_LOCK_KEY]);
      if (rows[0].locked) break;
      if (Date.now() >= deadline) {
        throw new MigrationError(`another migration run held the migration lock (advisory lock ${PRISMA_MIGRATE_LOCK_KEY}) for more than ${timeoutMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const value = await fn();
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** The ledger's applied migrations, after refusing failed and changed ones. */
async function readLedger(client: pg.Client, migrationsDir: string, local: LocalMigration[]): Promise<LedgerRow[]> {
  const rows = (await client.query<LedgerRow>(
    'SELECT migration_name, checksum, finished_at, rolled_back_at, started_at, logs FROM _prisma_migrations ORDER BY started_at',
  )).rows;
  refuseFailed(rows);
  const applied = rows.filter((row) => row.rolled_back_at === null);
  refuseChanged(applied, local, migrationsDir);
  return applied;
}

/** Like Prisma, creates the ledger only in an empty schema: tables without a ledger mean a wrong or unbaselined database. */
async function ensureLedger(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ tablename: string }>(
    'SELECT tablename FROM pg_tables WHERE schemaname = current_schema()',
  );
  const tables = rows.map((row) => row.tablename);
  if (tables.includes('_prisma_migrations')) return;
  if (tables.length > 0) {
    throw new MigrationError(
      `the database schema is not empty (${tables.slice(0, 5).join(', ')}${tables.length > 5 ? ', ...' : ''}) ` +
        'but has no _prisma_migrations ledger; use an empty database or baseline this one (prisma migrate resolve --applied <name>)',
    );
  }
  await client.query(CREATE_LEDGER_SQL);
}

function refuseFailed(rows: LedgerRow[]): void {
  const failed = rows.filter((row) => row.finished_at === null && row.rolled_back_at === null);
  if (failed.length === 0) return;
  const details = failed
    .map((row) => `- ${row.migration_name} (started ${row.started_at.toISOString()}) failed${row.logs?.trim() ? `: ${row.logs.trim()}` : ''}`)
    .join('\n');
  throw new MigrationError(
    `found failed migrations in the database; fix the cause, then mark each one rolled back ` +
      `(prisma migrate resolve --rolled-back <name>, or set rolled_back_at in _prisma_migrations) and run again:\n${details}`,
  );
}

function refuseChanged(applied: LedgerRow[], local: LocalMigration[], dir: string): void {
  const byName = new Map(local.map((m) => [m.name, m]));
  const changed = applied.filter((row) => {
    const file = byName.get(row.migration_name);
    // An applied migration missing here is left alone: older code may run against a newer database.
    return file !== undefined && !scriptMatchesChecksum(file.script, row.checksum);
  });
  if (changed.length === 0) return;
  throw new MigrationError(
    `applied migrations were modified after they were applied (checksum differs from ${dir}): ` +
      `${changed.map((row) => row.migration_name).join(', ')}; restore the original files and put changes in a new migration`,
  );
}

async function applyOne(
  client: pg.Client, migration: LocalMigration, lockTimeoutMs: number, migrationsDir: string, local: LocalMigration[], starting: () => void,
): Promise<'applied' | 'already applied'> {
  const id = randomUUID();
  const checksum = migrationChecksum(migration.script);
  try {
    return await locked(client, lockTimeoutMs, async () => {
      const applied = await readLedger(client, migrationsDir, local);
      if (applied.some((row) => row.migration_name === migration.name)) return 'already applied';
      starting();
      await client.query('INSERT INTO _prisma_migrations (id, checksum, started_at, migration_name) VALUES ($1, $2, now(), $3)', [
        id, checksum, migration.name,
      ]);
      try {
        await client.query(migration.script);
      } catch (err) {
        throw new ScriptFailed(err);
      }
      await client.query('UPDATE _prisma_migrations SET applied_steps_count = applied_steps_count + 1 WHERE id = $1', [id]);
      await client.query('UPDATE _prisma_migrations SET finished_at = clock_timestamp() WHERE id = $1', [id]);
      return 'applied';
    });
  } catch (err) {
    if (!(err instanceof ScriptFailed)) throw err;
    const logs = describeDbError(err.cause);
    // Recorded after the rollback, as Prisma records a failed migration, so every later run stops
    // until someone has looked at it.
    await client
      .query('INSERT INTO _prisma_migrations (id, checksum, started_at, migration_name, logs) VALUES ($1, $2, now(), $3, $4)', [
        id, checksum, migration.name, logs,
      ])
      .catch(() => {});
    throw new MigrationError(`migration ${migration.name} failed and was rolled back: ${logs}`);
  }
}

/** A migration's own SQL failed (not the ledger or the lock): the failure is recorded in the ledger. */
class ScriptFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('migration script failed');
  }
}

function describeDbError(err: unknown): string {
  const e = err as { message?: string; code?: string; position?: string };
  const where = e.position ? ` at character ${e.position}` : '';
  return `${e.code ? `Database error code: ${e.code}. ` : ''}${e.message ?? String(err)}${where}`;
}
