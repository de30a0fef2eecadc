import pg from 'pg';

/** Where `npm run db:migrate` and local services look when DATABASE_URL is unset. */
export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/conveyor';

function databaseName(url: URL): string {
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error(`database URL ${redactUrl(url.toString())} names no database`);
  return name;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The URL with its password replaced, for messages and logs. */
export function redactUrl(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '<unparseable database URL>';
  }
}

async function connectFirst(urls: string[]): Promise<pg.Client> {
  for (const [i, connectionString] of urls.entries()) {
    const client = new pg.Client({ connectionString });
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => {});
      // 3D000: that maintenance database does not exist on this server; try the next one.
      if ((err as { code?: string }).code !== '3D000' || i === urls.length - 1) throw err;
    }
  }
  throw new Error('no maintenance database to connect to');
}

/**
 * Codes that mean the server cannot be reached yet or is starting or stopping, not that the request
 * is wrong: socket and name-resolution failures (a Kubernetes Service whose pod is not up resolves
 * late) and Postgres's connection-exception class plus 57P01–57P03.
 */
export const DATABASE_UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  '08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03',
]);

/** The error's code: node's and pg's errors both put theirs in `code` (a SQLSTATE for Postgres's). */
function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether the error carries one of `codes`. */
function hasCodeIn(err: unknown, codes: ReadonlySet<string>): boolean {
  const code = codeOf(err);
  return code !== undefined && codes.has(code);
}

export function isDatabaseUnavailable(err: unknown): boolean {
  return hasCodeIn(err, DATABASE_UNAVAILABLE_CODES);
}

/**
 * Codes of a statement Postgres failed because of other transactions, not because of what it says:
 * a deadlock it broke (40P01), a serialization failure (40001), a lock it could not take (55P03).
 * Run again, the same statement can succeed.
 */
export const TRANSACTION_CONFLICT_CODES: ReadonlySet<string> = new Set(['40P01', '40001', '55P03']);

export function isTransactionConflict(err: unknown): boolean {
  return hasCodeIn(err, TRANSACTION_CONFLICT_CODES);
}

/**
 * SQLSTATE classes of a statement Postgres refused for a value it carries: a data exception (22: a
 * number or a timestamp out of range, a string it cannot take) or a broken constraint (23). Another
 * statement without that value would go through.
 */
const DATA_ERROR_CLASSES: ReadonlySet<string> = new Set(['22', '23']);

export function isDataError(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && code.length === 5 && DATA_ERROR_CLASSES.has(code.slice(0, 2));
}

export interface WaitForDatabaseOptions {
  /** How long to keep trying before the last error is thrown. */
  timeoutMs: number;
  /** Called once per failed attempt that will be retried. */
  onUnavailable?: (err: unknown, elapsedMs: number) => void;
}

/**
 * Resolves once the URL's server accepts a connection (to its maintenance database, so a database
 * that does not exist yet still counts as up). A one-shot job started beside its database (an init
 * container, a compose service) would otherwise fail on its first attempt and rely on a restart.
 */
export async function waitForDatabase(databaseUrl: string, { timeoutMs, onUnavailable }: WaitForDatabaseOptions): Promise<void> {
  const started = Date.now();
  for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    try {
      await withMaintenanceClient(databaseUrl, async () => {});
      return;
    } catch (err) {
      const elapsedMs = Date.now() - started;
      if (!isDatabaseUnavailable(err) || elapsedMs + delayMs > timeoutMs) throw err;
      onUnavailable?.(err, elapsedMs);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/** Runs `fn` connected to the server's `postgres` maintenance database, as the URL's user. */
async function withMaintenanceClient<T>(databaseUrl: string, fn: (client: pg.Client, name: string) => Promise<T>): Promise<T> {
  const url = new URL(databaseUrl);
  const name = databaseName(url);
  const client = await connectFirst(
    ['postgres', 'template1'].map((db) => Object.assign(new URL(url), { pathname: `/${db}` }).toString()),
  );
  try {
    return await fn(client, name);
  } finally {
    await client.end();
  }
}

/** Creates the URL's database unless it exists. Returns whether it created it. */
export async function createDatabaseIfMissing(databaseUrl: string): Promise<boolean> {
  return withMaintenanceClient(databaseUrl, async (client, name) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
      return true;
    } catch (err) {
      // Another starter created it between the check and CREATE: 42P04 duplicate_database, or
      // 23505 when both inserts race on pg_database's unique index.
      const code = (err as { code?: string }).code;
      if (code === '42P04' || code === '23505') return false;
      throw err;
    }
  });
}

/** Drops the URL's database, disconnecting its sessions first. For tests and tooling. */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  await withMaintenanceClient(databaseUrl, async (client, name) => {
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  });
}
