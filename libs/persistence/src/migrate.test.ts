import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPrismaClient } from './client.js';
import { createDatabaseIfMissing, dropDatabase } from './database.js';
import { migrate, MigrationError, PRISMA_MIGRATE_LOCK_KEY } from './migrate.js';
import { findMigrationsDir, readMigrations } from './migrations-dir.js';
import { createTempDatabase, testServerUrl, type TempDatabase } from './testing/temp-database.js';
import { Prisma } from './generated/prisma/client.js';

const migrationsDir = findMigrationsDir();
const created: TempDatabase[] = [];

async function freshDatabase(): Promise<string> {
  const db = await createTempDatabase({ migrated: false });
  created.push(db);
  return db.url;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

after(async () => {
  for (const db of created) await db.drop();
});

test('migrations folder is in Prisma format', () => {
  assert.match(readFileSync(path.join(migrationsDir, 'migration_lock.toml'), 'utf8'), /^provider = "postgresql"$/m);
  const local = readMigrations(migrationsDir);
  assert.ok(local.length >= 1);
  for (const m of local) assert.match(m.name, /^\d{14}_[a-z0-9_]+$/);
});

test('migrate applies pending migrations once and keeps the Prisma ledger', async () => {
  const url = await freshDatabase();
  const local = readMigrations(migrationsDir);

  const first = await migrate({ databaseUrl: url });
  assert.deepEqual(first.applied, local.map((m) => m.name));
  assert.deepEqual(first.alreadyApplied, []);

  const rows = await query<{ id: string; checksum: string; finished_at: Date | null; migration_name: string; logs: string | null; rolled_back_at: Date | null; started_at: Date; applied_steps_count: number }>(
    url, 'SELECT * FROM _prisma_migrations ORDER BY migration_name');
  assert.equal(rows.length, local.length);
  for (const [i, row] of rows.entries()) {
    const bytes = readFileSync(path.join(migrationsDir, local[i].name, 'migration.sql'));
    assert.equal(row.migration_name, local[i].name);
    assert.equal(row.checksum, createHash('sha256').update(bytes).digest('hex'));
    assert.match(row.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.ok(row.finished_at instanceof Date);
    assert.ok(row.finished_at.getTime() >= row.started_at.getTime());
    assert.equal(row.applied_steps_count, 1);
    assert.equal(row.rolled_back_at, null);
    assert.equal(row.logs, null);
  }

  // The ledger's DDL is Prisma's own, column by column.
  const columns = await query<{ column_name: string; data_type: string; character_maximum_length: number | null; is_nullable: string; column_default: string | null }>(
    url,
    `SELECT column_name, data_type, character_maximum_length, is_nullable, column_default
       FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
  );
  assert.deepEqual(columns.map((c) => [c.column_name, c.data_type, c.character_maximum_length, c.is_nullable, c.column_default]), [
    ['id', 'character varying', 36, 'NO', null],
    ['checksum', 'character varying', 64, 'NO', null],
    ['finished_at', 'timestamp with time zone', null, 'YES', null],
    ['migration_name', 'character varying', 255, 'NO', null],
    ['logs', 'text', null, 'YES', null],
    ['rolled_back_at', 'timestamp with time zone', null, 'YES', null],
    ['started_at', 'timestamp with time zone', null, 'NO', 'now()'],
    ['applied_steps_count', 'integer', null, 'NO', '0'],
  ]);
  const pk = await query<{ conname: string }>(url, "SELECT conname FROM pg_constraint WHERE conrelid = '_prisma_migrations'::regclass AND contype = 'p'");
  assert.deepEqual(pk.map((r) => r.conname), ['_prisma_migrations_pkey']);

  const second = await migrate({ databaseUrl: url });
  assert.deepEqual(second.applied, []);
  assert.deepEqual(second.alreadyApplied, local.map((m) => m.name));
  const after = await query<{ n: string }>(url, 'SELECT count(*) AS n FROM _prisma_migrations');
  assert.equal(Number(after[0].n), local.length);
});

test('every model round-trips through the generated client on the migrated schema', async () => {
  const url = await freshDatabase();
  await migrate({ databaseUrl: url });
  const prisma = createPrismaClient(url);
  try {
    const pipeline = await prisma.pipeline.create({
      data: { id: 'p1', name: 'P1', stages: ['GroupRespondRuleCheckStage', 'MessageProcessor'], config: { ai: { runner: { runner: 'local-agent' } } } },
    });
    assert.ok(pipeline.createdAt instanceof Date);
    const bot = await prisma.bot.create({
      data: { name: 'b', adapter: 'http-bot', adapterConfig: { inbound_secret: 's' }, pipeline: { connect: { id: 'p1' } } },
    });
    assert.match(bot.id, /^[0-9a-f-]{36}$/);
    assert.equal(bot.enabled, true);
    const withPipeline = await prisma.bot.findUniqueOrThrow({ where: { id: bot.id }, include: { pipeline: true } });
    assert.deepEqual(withPipeline.pipeline.stages, ['GroupRespondRuleCheckStage', 'MessageProcessor']);
    const pipelineWithBots = await prisma.pipeline.findUniqueOrThrow({ where: { id: 'p1' }, include: { bots: true } });
    assert.deepEqual(pipelineWithBots.bots.map((b) => b.id), [bot.id]);
    const updatedBot = await prisma.bot.update({ where: { id: bot.id }, data: { enabled: false } });
    assert.equal(updatedBot.enabled, false);
    assert.ok(updatedBot.updatedAt.getTime() >= bot.updatedAt.getTime());
    // Bot → Pipeline is RESTRICT: a pipeline in use cannot be deleted.
    await assert.rejects(prisma.pipeline.delete({ where: { id: 'p1' } }));

    const model = await prisma.llmModel.create({ data: { id: 'm1', name: 'M', baseUrl: 'http://x/v1', modelId: 'gpt-4o-mini' } });
    assert.deepEqual([model.apiKeyRef, model.abilities, model.extraArgs, model.timeoutMs], ['', [], {}, 120000]);
    const model2 = await prisma.llmModel.update({
      where: { id: 'm1' }, data: { abilities: ['func_call', 'vision'], apiKeyRef: 'env:K', extraArgs: { temperature: 0.1 }, timeoutMs: 5 },
    });
    assert.deepEqual(model2.abilities, ['func_call', 'vision']);
    assert.deepEqual(await prisma.llmModel.count({ where: { abilities: { has: 'vision' } } }), 1);

    const mcp = await prisma.mcpServer.create({ data: { id: 's1', name: 'S', transport: 'stdio', config: { command: 'x' } } });
    assert.equal(mcp.enabled, true);
    await prisma.mcpServer.update({ where: { id: 's1' }, data: { transport: 'http', enabled: false } });
    await prisma.mcpServer.delete({ where: { id: 's1' } });
    assert.equal(await prisma.mcpServer.count(), 0);

    const conversation = await prisma.conversation.create({
      data: {
        botId: bot.id, launcherType: 'person', launcherId: 'u1', pipelineId: 'p1',
        messages: {
          create: [
            { seq: 0, role: 'user', content: 'hi' },
            { seq: 1, role: 'assistant', content: Prisma.JsonNull, toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
            { seq: 2, role: 'tool', content: '42', toolCallId: 'c1' },
            { seq: 3, role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: 'data:' } }] },
          ],
        },
      },
      include: { messages: { orderBy: { seq: 'asc' } } },
    });
    assert.equal(conversation.archivedAt, null);
    assert.equal(typeof conversation.messages[0].id, 'bigint');
    assert.ok(conversation.messages[1].id > conversation.messages[0].id);
    assert.deepEqual(conversation.messages.map((m) => m.content), ['hi', null, '42', [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: 'data:' } }]]);
    assert.equal(conversation.messages[2].toolCallId, 'c1');
    assert.equal(conversation.messages[0].toolCalls, null);
    // (conversationId, seq) is unique.
    await assert.rejects(
      prisma.conversationMessage.create({ data: { conversationId: conversation.id, seq: 1, role: 'user', content: 'dup' } }),
      (err: unknown) => (err as { code?: string }).code === 'P2002',
    );
    const active = await prisma.conversation.findFirst({ where: { botId: bot.id, launcherType: 'person', launcherId: 'u1', archivedAt: null } });
    assert.equal(active?.id, conversation.id);
    await prisma.conversation.update({ where: { id: conversation.id }, data: { archivedAt: new Date() } });
    assert.equal(await prisma.conversation.count({ where: { botId: bot.id, archivedAt: null } }), 0);
    // Messages go with their conversation.
    await prisma.conversation.delete({ where: { id: conversation.id } });
    assert.equal(await prisma.conversationMessage.count(), 0);

    const receivedAt = new Date('2026-01-01T00:00:00.123Z');
    const record = await prisma.queryRecord.create({
      data: { id: '0b7d7a54-8e0e-4c39-9a0c-1f6a7f0d9c11', botId: bot.id, launcherType: 'group', launcherId: 'g1', receivedAt },
    });
    assert.deepEqual([record.status, record.attempt, record.pipelineId, record.startedAt, record.error, record.traceId], ['accepted', 0, null, null, null, null]);
    assert.equal(record.receivedAt.toISOString(), '2026-01-01T00:00:00.123Z');
    const done = await prisma.queryRecord.update({
      where: { id: record.id },
      data: { status: 'failed', pipelineId: 'p1', startedAt: new Date(), finishedAt: new Date(), error: 'boom', traceId: 'abc', attempt: { increment: 1 } },
    });
    assert.deepEqual([done.status, done.attempt, done.error], ['failed', 1, 'boom']);
    assert.equal(await prisma.queryRecord.count({ where: { status: 'failed' } }), 1);
    await prisma.queryRecord.delete({ where: { id: record.id } });

    await prisma.bot.delete({ where: { id: bot.id } });
    await prisma.pipeline.delete({ where: { id: 'p1' } });
    await prisma.llmModel.delete({ where: { id: 'm1' } });
  } finally {
    await prisma.$disconnect();
  }
});

test('a tampered checksum makes the runner refuse', async () => {
  const url = await freshDatabase();
  await migrate({ databaseUrl: url });
  await query(url, "UPDATE _prisma_migrations SET checksum = repeat('0', 64)");
  await assert.rejects(migrate({ databaseUrl: url }), (err: unknown) => {
    assert.ok(err instanceof MigrationError);
    assert.match(err.message, /modified after they were applied/);
    assert.match(err.message, /_init/);
    return true;
  });
});

test('a failed migration is rolled back, recorded, and blocks later runs until resolved', async () => {
  const url = await freshDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-migrations-'));
  try {
    cpSync(migrationsDir, dir, { recursive: true });
    mkdirSync(path.join(dir, '29991231000000_broken'));
    writeFileSync(path.join(dir, '29991231000000_broken', 'migration.sql'), 'CREATE TABLE "Half" ("id" INTEGER);\nSELECT * FROM "does_not_exist";\n');

    await assert.rejects(migrate({ databaseUrl: url, migrationsDir: dir }), /29991231000000_broken failed and was rolled back/);
    const half = await query<{ t: string | null }>(url, `SELECT to_regclass('"Half"')::text AS t`);
    assert.equal(half[0].t, null);
    const failed = await query<{ finished_at: Date | null; logs: string; applied_steps_count: number }>(
      url, "SELECT finished_at, logs, applied_steps_count FROM _prisma_migrations WHERE migration_name = '29991231000000_broken'");
    assert.equal(failed.length, 1);
    assert.equal(failed[0].finished_at, null);
    assert.equal(failed[0].applied_steps_count, 0);
    assert.match(failed[0].logs, /does_not_exist/);

    await assert.rejects(migrate({ databaseUrl: url, migrationsDir: dir }), /found failed migrations[\s\S]*29991231000000_broken/);

    // Resolved as rolled back (what `prisma migrate resolve --rolled-back` writes) and fixed: it runs.
    await query(url, "UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = '29991231000000_broken'");
    writeFileSync(path.join(dir, '29991231000000_broken', 'migration.sql'), 'CREATE TABLE "Half" ("id" INTEGER);\n');
    const result = await migrate({ databaseUrl: url, migrationsDir: dir });
    assert.deepEqual(result.applied, ['29991231000000_broken']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two concurrent runners apply each migration exactly once', async () => {
  const url = await freshDatabase();
  const [a, b] = await Promise.all([migrate({ databaseUrl: url }), migrate({ databaseUrl: url })]);
  const local = readMigrations(migrationsDir).map((m) => m.name);
  assert.deepEqual([...a.applied, ...b.applied].sort(), local);
  const rows = await query<{ n: string }>(url, 'SELECT count(*) AS n FROM _prisma_migrations');
  assert.equal(Number(rows[0].n), local.length);
});

test('a runner waits for the migration lock held by another (as prisma migrate deploy holds it) and leaves none behind', async () => {
  const url = await freshDatabase();
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
    await assert.rejects(migrate({ databaseUrl: url, lockTimeoutMs: 500 }), (err: unknown) => err instanceof MigrationError && /held the migration lock/.test(err.message));
    const waiting = migrate({ databaseUrl: url, lockTimeoutMs: 60_000 });
    await holder.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
    assert.equal((await waiting).applied.length, readMigrations(migrationsDir).length);
  } finally {
    await holder.end();
  }
  // Transaction-scoped: nothing stays locked on the server connection (a pooled one behind PgBouncer).
  const locks = await query<{ n: string }>(url, "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())", [PRISMA_MIGRATE_LOCK_KEY]);
  assert.equal(Number(locks[0].n), 0);
});

test('a non-empty database without a ledger is refused', async () => {
  const url = await freshDatabase();
  await query(url, 'CREATE TABLE something_else (id int)');
  await assert.rejects(migrate({ databaseUrl: url }), /not empty[\s\S]*something_else/);
});

test('createDatabaseIfMissing creates once', async () => {
  const url = new URL(testServerUrl());
  url.pathname = `/conveyor_test_create_${process.pid}_${Date.now()}`;
  try {
    assert.equal(await createDatabaseIfMissing(url.toString()), true);
    assert.equal(await createDatabaseIfMissing(url.toString()), false);
    assert.equal((await query(url.toString(), 'SELECT 1 AS one'))[0].one, 1);
  } finally {
    await dropDatabase(url.toString());
  }
});

test('the db:migrate CLI creates the database, migrates and reports', async () => {
  const url = new URL(testServerUrl());
  url.pathname = `/conveyor_test_cli_${process.pid}_${Date.now()}`;
  const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cli', 'migrate.js');
  try {
    const run = () => spawnSync(process.execPath, [cli], { env: { ...process.env, DATABASE_URL: url.toString() }, encoding: 'utf8' });
    const first = run();
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /created database/);
    assert.match(first.stdout, /applied \d+ migration\(s\) to .*20261130000000_init/);
    const second = run();
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /is up to date/);

    const bad = spawnSync(process.execPath, [cli, '/nonexistent/migrations'], { env: { ...process.env, DATABASE_URL: url.toString() }, encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /db:migrate failed: migrations folder \/nonexistent\/migrations does not exist/);
  } finally {
    await dropDatabase(url.toString());
  }
});
