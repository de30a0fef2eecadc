import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';
import { waitUntil } from './wait.js';

export const PGBOUNCER_BIN = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** The Postgres server behind it (user, host and port are used; every database is proxied). */
  serverUrl: string;
  /** Server connections per database and user pair: what the whole fleet of clients shares. */
  poolSize: number;
  /** Client connections PgBouncer accepts. */
  maxClientConnections?: number;
}

export interface PgBouncer {
  port: number;
  /** `serverUrl` with PgBouncer's address and `database`. */
  urlFor(database: string): string;
  /** Runs a command on the admin console (`SHOW POOLS`, `SHOW STATS`); rows keyed by column. */
  admin(command: string): Promise<Record<string, string>[]>;
  logs: string[];
  stop(): Promise<void>;
}

/**
 * Debian's pgbouncer on a free loopback port in transaction pooling mode, with its own ini and
 * userlist in a temporary folder. Authentication is `trust` both ways (the local test server trusts
 * loopback), so the URL's user must be in the userlist and needs no password.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const server = new URL(options.serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-pgbouncer-'));
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const userlist = path.join(dir, 'userlist.txt');
  await writeFile(userlist, `"${user}" ""\n`);
  await writeFile(ini, [
    '[databases]',
    // The wildcard: every database name a client asks for, on the same server (the per-run test
    // databases and the `postgres` maintenance database that creating a database connects to).
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    // TCP only: no socket file for a dropped-privileges process to create.
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${userlist}`,
    `admin_users = ${user}`,
    'pool_mode = transaction',
    `default_pool_size = ${options.poolSize}`,
    'min_pool_size = 0',
    'reserve_pool_size = 0',
    `max_client_conn = ${options.maxClientConnections ?? 500}`,
    // Debian's 1.18 has no `max_prepared_statements` (1.21+): named prepared statements are not carried.
    'log_connections = 0',
    'log_disconnections = 0',
    'stats_period = 1',
    '',
  ].join('\n'));
  // pgbouncer refuses to run as root; it then needs `-u` and to read its folder as that user.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chmod(dir, 0o755);
  const child: ChildProcess = spawn(PGBOUNCER_BIN, [...(asRoot ? ['-u', 'nobody'] : []), ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const collect = (d: Buffer) => {
    logs.push(...d.toString().split('\n').filter(Boolean));
    if (logs.length > 2_000) logs.splice(0, logs.length - 2_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const urlFor = (database: string) => {
    const url = new URL(options.serverUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    url.pathname = `/${database}`;
    return url.toString();
  };
  const admin: PgBouncer['admin'] = async (command) => {
    const client = new pg.Client({ connectionString: urlFor('pgbouncer') });
    await client.connect();
    try {
      // The admin console speaks the simple query protocol only: a query without parameters.
      const result = await client.query<Record<string, unknown>>(command);
      return result.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)])));
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await waitUntil('pgbouncer up', async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${logs.join('\n')}`);
      return (await admin('SHOW VERSION')).length > 0;
    }, 30_000, 100);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, urlFor, admin, logs, stop };
}
