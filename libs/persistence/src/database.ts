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
