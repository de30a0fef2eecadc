import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDatabaseIfMissing, createPrismaClient, dropDatabase, migrate, readMigrations, resolveMigrationsDir } from '@conveyor/persistence';
import { testServerUrl } from '@conveyor/persistence/testing';
import { startTestSystem, NATS_URL, type TestSystem } from '../harness/system.js';
import { startPgBouncer, type PgBouncer } from '../harness/pgbouncer.js';
import { ALL_SERVICES, repoRoot } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, startAdmin } from '../admin/admin-support.js';
import { finalReply, send, text } from './pipeline-support.js';

/**
 * Fewer server connections than the services open client connections, so PgBouncer must hand one
 * server connection to several processes in turn: a statement that relies on its session (a named
 * prepared statement, a session advisory lock, SET, LISTEN) would meet another process's session.
 */
const POOL_SIZE = 3;

/** A database URL on the test server (not through PgBouncer) for `database`. */
function directUrl(database: string): string {
  const url = new URL(testServerUrl());
  url.pathname = `/${database}`;
  return url.toString();
}

/** A query on a direct connection to `database` of the test server. */
async function directQuery<T extends pg.QueryResultRow>(database: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: directUrl(database) });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

function runSetup(env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  const program = path.join(repoRoot, 'libs/config/dist/cli/setup.js');
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [program], { env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve({ stdout, stderr }));
  });
}

/** Total transactions PgBouncer carried for `database` (its admin console's SHOW STATS). */
async function transactionsThrough(bouncer: PgBouncer, database: string): Promise<number> {
  const row = (await bouncer.admin('SHOW STATS')).find((r) => r.database === database);
  return Number(row?.total_xact_count ?? 0);
}

describe('Postgres behind PgBouncer 1.18 in transaction pooling mode', () => {
  let bouncer: PgBouncer;
  let sys: TestSystem | undefined;
  const migratedDb = `conveyor_test_${uniqueName('pgb')}`;
  let configDir: string | undefined;

  before(async () => {
    bouncer = await startPgBouncer({ serverUrl: testServerUrl(), poolSize: POOL_SIZE });
  });
  after(async () => {
    await sys?.stop();
    await bouncer?.stop();
    await dropDatabase(directUrl(migratedDb)).catch(() => undefined);
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  test('migrations and setup run through it: two runners at once apply each migration exactly once', async () => {
    const pooled = bouncer.urlFor(migratedDb);
    // Creating the database goes through PgBouncer's `postgres` entry (here its wildcard).
    assert.equal(await createDatabaseIfMissing(pooled), true);
    const [a, b] = await Promise.all([migrate({ databaseUrl: pooled }), migrate({ databaseUrl: pooled })]);
    const local = readMigrations(resolveMigrationsDir()).map((m) => m.name);
    assert.deepEqual([...a.applied, ...b.applied].sort(), local);
    const ledger = await directQuery<{ migration_name: string; finished: boolean }>(
      migratedDb, 'SELECT migration_name, finished_at IS NOT NULL AS finished FROM _prisma_migrations ORDER BY migration_name');
    assert.deepEqual(ledger.map((r) => r.migration_name), local, 'one ledger row per migration');
    assert.ok(ledger.every((r) => r.finished));
    // No migration lock stays behind on a pooled server connection.
    const locks = await directQuery<{ n: string }>('postgres',
      "SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = $1", [migratedDb]);
    assert.equal(Number(locks[0].n), 0);

    // The deployment's one-shot setup (migrations, pgvector, conveyor.yaml) through PgBouncer too.
    configDir = await mkdtemp(path.join(tmpdir(), 'conveyor-pgbouncer-config-'));
    const configFile = path.join(configDir, 'conveyor.yaml');
    await writeFile(configFile, JSON.stringify({
      models: [{ id: 'pooled-model', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'CONVEYOR_KEY_POOLED', model: 'm' }],
      pipelines: [{ id: 'pooled', config: { ai: { 'local-agent': { model: { primary: 'pooled-model', fallbacks: [] } } } } }],
    }));
    const setup = await runSetup({ DATABASE_URL: pooled, CONVEYOR_CONFIG: configFile, NATS_URL, CONVEYOR_SUBJECT_PREFIX: uniqueName('pgb'), CONVEYOR_KEY_POOLED: 'k' });
    assert.match(setup.stdout, new RegExp(`0 migration\\(s\\) applied, ${local.length} already applied`));
    const prisma = createPrismaClient(directUrl(migratedDb));
    try {
      assert.equal((await prisma.pipeline.findUniqueOrThrow({ where: { id: 'pooled' } })).id, 'pooled');
    } finally {
      await prisma.$disconnect();
    }
  });

  test('a message through all four services and admin API reads and writes, over pooled connections', async () => {
    // The system's database is created and migrated directly; every service reaches it through PgBouncer.
    const system = await startTestSystem({ startServices: false, pipelineConfig: { ai: { 'local-agent': { prompt: [{ role: 'system', content: 'You are the old prompt.' }] } } } });
    sys = system;
    const database = new URL(system.db.url).pathname.slice(1);
    const pooled = bouncer.urlFor(database);
    const before = await transactionsThrough(bouncer, database);
    // The runner on one connection, so its second reply's history write goes out on the connection that
    // prepared the first one's.
    await Promise.all(ALL_SERVICES.map((name) => system.services.start(name, { DATABASE_URL: pooled, ...(name === 'runner' ? { DATABASE_POOL_SIZE: '1' } : {}) })));
    const admin = await startAdmin(system, { DATABASE_URL: pooled });
    system.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));

    const first = await finalReply(system, await send(system, text('pooled-1', 'first')), 60_000);
    assert.deepEqual(first.json.message, [{ type: 'Plain', text: 'echo: first' }]);
    assert.match(String(system.llm.requests.at(-1)?.body.messages?.[0]?.content), /^You are the old prompt\./);
    // PgBouncer replaces its server connections (here all at once): the statements the services prepared
    // are gone, while their clients, still connected to PgBouncer, believe them prepared.
    await directQuery('postgres', 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);

    // Admin API: sign-in (a transaction with an advisory lock), reads, versioned writes.
    const api = new AdminClient(admin.url);
    await api.login();
    const model = await api.call('POST', '/models', { id: 'pooled-extra', baseUrl: 'http://127.0.0.1:9/v1', model: 'extra', apiKey: 'pooled-secret-key' });
    assert.equal(model.status, 201, JSON.stringify(model.body));
    const read = await api.call('GET', '/models/pooled-extra');
    assert.equal(read.status, 200);
    assert.equal(read.body.version, 1);
    assert.equal(read.body.apiKey.source, 'encrypted');
    const current = await api.call('GET', '/pipelines/default');
    assert.equal(current.status, 200);
    const config = structuredClone(current.body.config);
    config.ai['local-agent'].prompt = [{ role: 'system', content: 'You are the new prompt.' }];
    const changed = await api.call('PATCH', '/pipelines/default', { config }, { 'if-match': String(current.body.version) });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    const stale = await api.call('PATCH', '/pipelines/default', { config, version: current.body.version });
    assert.equal(stale.status, 409, 'a write against an old version is refused');
    assert.equal(stale.body.code, 'version_conflict');

    // The services read the written pipeline through PgBouncer for the next reply.
    const second = await finalReply(system, await send(system, text('pooled-2', 'second')), 60_000);
    assert.deepEqual(second.json.message, [{ type: 'Plain', text: 'echo: second' }]);
    assert.match(String(system.llm.requests.at(-1)?.body.messages?.[0]?.content), /^You are the new prompt\./);

    // It went through PgBouncer, and it was pooled: more client connections than server connections.
    const pools = (await bouncer.admin('SHOW POOLS')).filter((p) => p.database === database);
    assert.deepEqual(pools.map((p) => p.pool_mode), ['transaction']);
    const clients = (await bouncer.admin('SHOW CLIENTS')).filter((c) => c.database === database).length;
    const servers = await directQuery<{ n: string }>('postgres', 'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1', [database]);
    const carried = (await transactionsThrough(bouncer, database)) - before;
    assert.ok(clients > POOL_SIZE, `${clients} client connections from five services`);
    assert.ok(Number(servers[0].n) <= POOL_SIZE, `${servers[0].n} server connections for ${clients} clients`);
    assert.ok(carried > 0, `${carried} transactions through PgBouncer`);
    console.log(`# pgbouncer: ${clients} client connections over ${servers[0].n} server connections (pool ${POOL_SIZE}), ${carried} transactions`);
    // The runner's next history write met a server session without its statement: it ran unnamed, and
    // the runner said once that it goes on without prepared statements. Nothing failed because of them.
    const lines = system.services.allLogs().split('\n');
    const turnedOff = lines.filter((l) => l.includes('cannot keep prepared statements'));
    assert.ok(turnedOff.some((l) => l.startsWith('runner')), `the runner turned prepared statements off:\n${turnedOff.join('\n')}`);
    for (const name of ALL_SERVICES) assert.ok(turnedOff.filter((l) => l.startsWith(`${name}|`)).length <= 1, `${name} said it once`);
    assert.deepEqual(lines.filter((l) => l.includes('prepared statement') && !l.includes('cannot keep prepared statements')), [], 'no prepared-statement errors in the services\' logs');
  });
});
