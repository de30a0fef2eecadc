import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPrismaClient } from '../client.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { findMigrationsDir } from '../migrations-dir.js';
import { createTempDatabase, type TempDatabase } from '../testing/temp-database.js';
import { applyConfigFile, syncConfigFile } from './apply.js';
import { ConfigFileError } from './errors.js';
import { loadConfigFile, parseConfigText } from './load.js';

const exampleFile = path.join(path.dirname(path.dirname(findMigrationsDir())), 'conveyor.example.yaml');
const BOT_ID = '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34';
let db: TempDatabase;
let prisma: PrismaClient;

before(async () => {
  db = await createTempDatabase();
  prisma = createPrismaClient(db.url);
});

after(async () => {
  await prisma?.$disconnect();
  await db?.drop();
});

async function snapshot() {
  const [models, pipelines, bots, mcpServers] = await Promise.all([
    prisma.llmModel.findMany({ orderBy: { id: 'asc' } }),
    prisma.pipeline.findMany({ orderBy: { id: 'asc' } }),
    prisma.bot.findMany({ orderBy: { id: 'asc' } }),
    prisma.mcpServer.findMany({ orderBy: { id: 'asc' } }),
  ]);
  return { models, pipelines, bots, mcpServers };
}

test('applying the example creates its rows; applying it again changes nothing', async () => {
  const config = await loadConfigFile(exampleFile, { env: { HTTP_BOT_INBOUND_SECRET: 'x' } });
  const first = await applyConfigFile(prisma, config);
  assert.deepEqual(first.models, { created: ['fake'], updated: [], unchanged: [] });
  assert.deepEqual(first.pipelines, { created: ['default'], updated: [], unchanged: [] });
  assert.deepEqual(first.bots, { created: [BOT_ID], updated: [], unchanged: [] });
  assert.deepEqual(first.mcpServers, { created: [], updated: [], unchanged: [] });

  const rows = await snapshot();
  assert.equal(rows.models.length, 1);
  assert.deepEqual(
    [rows.models[0].baseUrl, rows.models[0].apiKeyRef, rows.models[0].modelId, rows.models[0].abilities, rows.models[0].timeoutMs],
    ['http://127.0.0.1:8090/v1', 'env:LLM_API_KEY', 'gpt-4o-mini', ['func_call'], 120000],
  );
  assert.deepEqual(rows.pipelines[0].config, config.pipelines[0].config);
  assert.deepEqual(rows.pipelines[0].stages, config.pipelines[0].stages);
  assert.equal((rows.pipelines[0].config as any).ai['local-agent'].model.primary, 'fake');
  assert.deepEqual(rows.bots[0].adapterConfig, { inbound_secret: 'x', callback_url: 'http://127.0.0.1:8091/callback' });
  assert.equal(rows.bots[0].pipelineId, 'default');
  const withPipeline = await prisma.bot.findUniqueOrThrow({ where: { id: BOT_ID }, include: { pipeline: true } });
  assert.equal(withPipeline.pipeline.id, 'default');

  const second = await applyConfigFile(prisma, await loadConfigFile(exampleFile, { env: { HTTP_BOT_INBOUND_SECRET: 'x' } }));
  assert.deepEqual(second.models, { created: [], updated: [], unchanged: ['fake'] });
  assert.deepEqual(second.pipelines, { created: [], updated: [], unchanged: ['default'] });
  assert.deepEqual(second.bots, { created: [], updated: [], unchanged: [BOT_ID] });
  // Not even updatedAt moved.
  assert.deepEqual(await snapshot(), rows);
});

test('a changed value updates just that row', async () => {
  const config = await loadConfigFile(exampleFile, { env: { HTTP_BOT_INBOUND_SECRET: 'rotated' } });
  const before = await snapshot();
  const summary = await applyConfigFile(prisma, config);
  assert.deepEqual(summary.bots.updated, [BOT_ID]);
  assert.deepEqual(summary.pipelines.unchanged, ['default']);
  assert.deepEqual(summary.models.unchanged, ['fake']);
  const after = await snapshot();
  assert.equal((after.bots[0].adapterConfig as any).inbound_secret, 'rotated');
  assert.ok(after.bots[0].updatedAt > before.bots[0].updatedAt);
  assert.deepEqual(after.pipelines, before.pipelines);
});

test('syncConfigFile lets a file refer to pipelines and models already in the database', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-config-'));
  try {
    const file = path.join(dir, 'conveyor.yaml');
    writeFileSync(file, `
pipelines:
  - id: second
    config: {ai: {local-agent: {model: {primary: fake}}}}
bots:
  - id: 0e9a3c55-7c1d-4f55-8a9e-2b6f4d1c8e70
    adapter: http-bot
    pipeline: default
    enabled: false
mcpServers:
  - {id: fs, transport: stdio, config: {command: mcp-fs}}
`);
    await assert.rejects(loadConfigFile(file), /bots\[0\]\.pipeline: unknown pipeline "default"/);
    const { summary } = await syncConfigFile(prisma, file);
    assert.deepEqual(summary.pipelines.created, ['second']);
    assert.deepEqual(summary.bots.created, ['0e9a3c55-7c1d-4f55-8a9e-2b6f4d1c8e70']);
    assert.deepEqual(summary.mcpServers.created, ['fs']);
    const bot = await prisma.bot.findUniqueOrThrow({ where: { id: '0e9a3c55-7c1d-4f55-8a9e-2b6f4d1c8e70' } });
    assert.equal(bot.enabled, false);
    const again = await syncConfigFile(prisma, file);
    assert.deepEqual(again.summary.mcpServers.unchanged, ['fs']);
    assert.deepEqual(again.summary.bots.unchanged, ['0e9a3c55-7c1d-4f55-8a9e-2b6f4d1c8e70']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('applying a config whose bot names a pipeline missing from file and database fails and writes nothing', async () => {
  const text = `
models: [{id: other, baseUrl: "http://x/v1", model: y}]
bots: [{id: 7d1f0a2b-9c3e-4b5a-8d6f-1e2a3b4c5d6e, adapter: http-bot, pipeline: ghost}]
`;
  // The caller claimed "ghost" exists; the database says otherwise.
  const config = parseConfigText(text, 'ghost.yaml', { env: {}, knownPipelineIds: ['ghost'] });
  await assert.rejects(applyConfigFile(prisma, config), (err: unknown) => {
    assert.ok(err instanceof ConfigFileError);
    assert.match(err.message, /^ghost\.yaml: bots\[0\]\.pipeline: unknown pipeline "ghost"/);
    return true;
  });
  assert.equal(await prisma.llmModel.count({ where: { id: 'other' } }), 0);
});

test('concurrent applies of the same file do not conflict', async () => {
  const fresh = await createTempDatabase();
  const clients = [createPrismaClient(fresh.url), createPrismaClient(fresh.url)];
  try {
    const config = await loadConfigFile(exampleFile, { env: {} });
    const summaries = await Promise.all(clients.map((c) => applyConfigFile(c, config)));
    assert.deepEqual(summaries.flatMap((s) => s.pipelines.created), ['default']);
    assert.deepEqual(summaries.flatMap((s) => s.pipelines.unchanged), ['default']);
    assert.equal(await clients[0].bot.count(), 1);
  } finally {
    await Promise.all(clients.map((c) => c.$disconnect()));
    await fresh.drop();
  }
});
