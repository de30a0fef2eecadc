import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { ConfigChanged, topology } from '@conveyor/contracts';
import { createPrismaClient, findMigrationsDir, type PrismaClient } from '@conveyor/persistence';
import { createTempDatabase, type TempDatabase } from '@conveyor/persistence/testing';
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
  assert.deepEqual(first.models, { created: ['fake'], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] });
  assert.deepEqual(first.pipelines, { created: ['default'], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] });
  assert.deepEqual(first.bots, { created: [BOT_ID], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] });
  assert.deepEqual(first.mcpServers, { created: [], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] });

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
  assert.deepEqual(second.models, { created: [], updated: [], unchanged: ['fake'], retired: [], kept: [], notManaged: [] });
  assert.deepEqual(second.pipelines, { created: [], updated: [], unchanged: ['default'], retired: [], kept: [], notManaged: [] });
  assert.deepEqual(second.bots, { created: [], updated: [], unchanged: [BOT_ID], retired: [], kept: [], notManaged: [] });
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
    config: {inbound_secret: s}
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

test('a pipeline\'s MCP binding is stored on its row and may name a server only the database has', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-config-'));
  try {
    const file = path.join(dir, 'conveyor.yaml');
    // `fs` came from an earlier file (the test above); this one does not list it.
    writeFileSync(file, `
pipelines:
  - id: bound
    config: {ai: {local-agent: {model: {primary: fake}}}}
    extensionsPreferences: {enable_all_mcp_servers: false, mcp_servers: [fs]}
`);
    const { summary } = await syncConfigFile(prisma, file);
    assert.deepEqual(summary.pipelines.created, ['bound']);
    const row = await prisma.pipeline.findUniqueOrThrow({ where: { id: 'bound' } });
    assert.deepEqual(row.extensionsPreferences, { enable_all_mcp_servers: false, mcp_servers: ['fs'], enable_all_plugins: true, plugins: [] });
    assert.deepEqual((await syncConfigFile(prisma, file)).summary.pipelines.unchanged, ['bound']);
    writeFileSync(file, `
pipelines:
  - id: bound
    config: {ai: {local-agent: {model: {primary: fake}}}}
`);
    assert.deepEqual((await syncConfigFile(prisma, file)).summary.pipelines.updated, ['bound']);
    // Left out now, enable_all_mcp_servers keeps its stored false; the list is the file's (none).
    assert.deepEqual((await prisma.pipeline.findUniqueOrThrow({ where: { id: 'bound' } })).extensionsPreferences, { enable_all_mcp_servers: false, mcp_servers: [], enable_all_plugins: true, plugins: [] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('applying a config whose bot names a pipeline missing from file and database fails and writes nothing', async () => {
  const text = `
models: [{id: other, baseUrl: "http://x/v1", model: y}]
bots: [{id: 7d1f0a2b-9c3e-4b5a-8d6f-1e2a3b4c5d6e, adapter: http-bot, pipeline: ghost, config: {inbound_secret: s}}]
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

test('rows created outside the file that the file does not mention are left alone, listed, and named in setup\'s warning', async () => {
  const fresh = await createTempDatabase();
  const client = createPrismaClient(fresh.url);
  try {
    await applyConfigFile(client, await loadConfigFile(exampleFile, { env: {} }));
    // What the console or SQL created: not the file's to retire.
    const suffix = randomUUID().slice(0, 8);
    const [model, pipeline, bot, mcpServer] = [`model-${suffix}`, `pipeline-${suffix}`, randomUUID(), `mcp-${suffix}`];
    await client.llmModel.create({ data: { id: model, name: model, baseUrl: 'http://llm/v1', modelId: 'gpt' } });
    await client.pipeline.create({ data: { id: pipeline, name: pipeline, stages: [], config: {} } });
    await client.bot.create({ data: { id: bot, name: 'removed bot', adapter: 'http-bot', adapterConfig: {}, pipelineId: pipeline, enabled: true } });
    await client.mcpServer.create({ data: { id: mcpServer, name: mcpServer, transport: 'stdio', config: {} } });

    const summary = await applyConfigFile(client, await loadConfigFile(exampleFile, { env: {} }));
    assert.deepEqual(
      [summary.bots.notManaged, summary.pipelines.notManaged, summary.models.notManaged, summary.mcpServers.notManaged],
      [[bot], [pipeline], [model], [mcpServer]],
    );
    assert.equal((await client.bot.findUniqueOrThrow({ where: { id: bot } })).enabled, true, 'applying never retires what the file did not create');

    const setup = await runSetup({ DATABASE_URL: fresh.url, CONVEYOR_CONFIG: exampleFile });
    const warning = setup.stderr.split('\n').find((line) => line.startsWith('setup: warning: '));
    assert.ok(warning, `setup warned:\n${setup.stderr}`);
    for (const id of [bot, pipeline, model, mcpServer]) assert.ok(warning.includes(id), `the warning names ${id}: ${warning}`);
    assert.match(warning, new RegExp(`bots ${bot}; pipelines ${pipeline}; models ${model}; mcpServers ${mcpServer}$`));
  } finally {
    await client.$disconnect();
    await fresh.drop();
  }
});

test('the file is the desired state: what it no longer names is disabled or deleted, a dry run shows it first, naming a bot again enables it', async () => {
  const fresh = await createTempDatabase();
  const client = createPrismaClient(fresh.url);
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-config-'));
  try {
    await applyConfigFile(client, await loadConfigFile(exampleFile, { env: {} }));
    const other = randomUUID();
    const second = path.join(dir, 'second.yaml');
    writeFileSync(second, `
models: [{id: m2, baseUrl: "http://llm/v1", model: gpt}]
pipelines: [{id: p2, config: {ai: {local-agent: {model: {primary: m2}}}}}]
bots: [{id: ${other}, adapter: http-bot, pipeline: p2, config: {inbound_secret: s, callback_url: "http://cb/x"}}]
`);
    const before = await client.bot.findMany({ orderBy: { id: 'asc' } });
    const plan = await syncConfigFile(client, second, { dryRun: true });
    assert.deepEqual(plan.summary.bots, { created: [other], updated: [], unchanged: [], retired: [BOT_ID], kept: [], notManaged: [] });
    // The example's pipeline is still named by its (now disabled) bot, and its model by that pipeline.
    assert.deepEqual([plan.summary.pipelines.kept, plan.summary.models.kept], [['default'], ['fake']]);
    assert.deepEqual(await client.bot.findMany({ orderBy: { id: 'asc' } }), before, 'a dry run writes nothing');
    assert.equal(await client.llmModel.count({ where: { id: 'm2' } }), 0);

    const dry = await runSetup({ DATABASE_URL: fresh.url, CONVEYOR_CONFIG: second }, ['--dry-run']);
    assert.match(dry.stdout, new RegExp(`bots: create ${other}; disabled \\(no longer in the file\\) ${BOT_ID}`));
    assert.deepEqual(await client.bot.findMany({ orderBy: { id: 'asc' } }), before, 'setup --dry-run writes nothing');

    await syncConfigFile(client, second);
    assert.equal((await client.bot.findUniqueOrThrow({ where: { id: BOT_ID } })).enabled, false, 'the bot the file dropped no longer answers');
    assert.equal((await client.bot.findUniqueOrThrow({ where: { id: other } })).enabled, true);

    // The bot moves to a new pipeline: the old pipeline and the model only it used are deleted.
    const third = path.join(dir, 'third.yaml');
    writeFileSync(third, `
models: [{id: m3, baseUrl: "http://llm/v1", model: gpt}]
pipelines: [{id: p3, config: {ai: {local-agent: {model: {primary: m3}}}}}]
bots: [{id: ${other}, adapter: http-bot, pipeline: p3, config: {inbound_secret: s, callback_url: "http://cb/x"}}]
`);
    const moved = await syncConfigFile(client, third);
    assert.deepEqual([moved.summary.pipelines.retired, moved.summary.models.retired], [['p2'], ['m2']]);
    assert.equal(await client.pipeline.count({ where: { id: 'p2' } }), 0);
    assert.equal(await client.llmModel.count({ where: { id: 'm2' } }), 0);

    const back = await applyConfigFile(client, await loadConfigFile(exampleFile, { env: {} }));
    assert.deepEqual([back.bots.updated, back.bots.retired], [[BOT_ID], [other]]);
    assert.equal((await client.bot.findUniqueOrThrow({ where: { id: BOT_ID } })).enabled, true, 'named again, the bot answers again');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await client.$disconnect();
    await fresh.drop();
  }
});

test('setup does not warn when the database holds only what the file has', async () => {
  const fresh = await createTempDatabase();
  try {
    const setup = await runSetup({ DATABASE_URL: fresh.url, CONVEYOR_CONFIG: exampleFile });
    assert.match(setup.stdout, /setup: loaded /);
    assert.doesNotMatch(setup.stderr, /setup: warning/);
  } finally {
    await fresh.drop();
  }
});

/**
 * Runs `npm run setup`'s program, as `npm start` and the deployment's migrate job do. Its change
 * announcements go to a prefix of the test's own, never to running services.
 */
function runSetup(env: NodeJS.ProcessEnv, args: string[] = []): Promise<{ stdout: string; stderr: string }> {
  const program = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cli', 'setup.js');
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [program, ...args], { env: { ...process.env, CONVEYOR_SUBJECT_PREFIX: `setup${randomUUID().slice(0, 8)}`, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ stdout, stderr }));
  });
}

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

test('setup announces what it changed on config.changed, so running services drop those rows', async () => {
  const fresh = await createTempDatabase({ migrated: false });
  const prefix = `setup${randomUUID().slice(0, 8)}`;
  const nc = await connect({ servers: process.env.NATS_URL || 'nats://127.0.0.1:4222' });
  const received: ConfigChanged[] = [];
  nc.subscribe(topology(prefix).subjects.configChanged, { callback: (_err, msg) => void received.push(ConfigChanged.parse(msg.json())) });
  await nc.flush();
  try {
    const setup = await runSetup({ DATABASE_URL: fresh.url, CONVEYOR_CONFIG: exampleFile, CONVEYOR_SUBJECT_PREFIX: prefix });
    assert.match(setup.stdout, /announced \d+ configuration change/);
    const deadline = Date.now() + 10_000;
    while (!received.some((e) => e.kind === 'bot') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(received.map((e) => `${e.kind} ${e.id} ${e.revision}`).sort(), [`bot ${BOT_ID} 1`, 'model fake 1', 'pipeline default 1']);
    const again = await runSetup({ DATABASE_URL: fresh.url, CONVEYOR_CONFIG: exampleFile, CONVEYOR_SUBJECT_PREFIX: prefix });
    assert.doesNotMatch(again.stdout, /announced/, 'an apply that changes nothing announces nothing');
  } finally {
    await nc.close();
    await fresh.drop();
  }
});

test('a pipeline new to the database binds no MCP server unless the file says so; one already stored keeps its binding', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-config-'));
  const fresh = `fresh-${randomUUID()}`;
  const legacy = `legacy-${randomUUID()}`;
  const opened = `opened-${randomUUID()}`;
  try {
    // Stored before new pipelines opted in: LangBot's shape, where an absent key means every server.
    await prisma.pipeline.create({ data: { id: legacy, name: legacy, stages: [], config: {}, extensionsPreferences: {} } });
    const file = path.join(dir, 'conveyor.yaml');
    writeFileSync(file, `
pipelines:
  - {id: ${fresh}, config: {ai: {local-agent: {model: {primary: fake}}}}}
  - {id: ${legacy}, config: {ai: {local-agent: {model: {primary: fake}}}}}
  - {id: ${opened}, config: {ai: {local-agent: {model: {primary: fake}}}}, extensionsPreferences: {enable_all_mcp_servers: true}}
`);
    await syncConfigFile(prisma, file);
    const binding = async (id: string) => ((await prisma.pipeline.findUniqueOrThrow({ where: { id } })).extensionsPreferences as { enable_all_mcp_servers?: boolean; mcp_servers?: string[] });
    assert.deepEqual(await binding(fresh).then((b) => [b.enable_all_mcp_servers, b.mcp_servers]), [false, []], 'a new pipeline opts in');
    assert.equal((await binding(legacy)).enable_all_mcp_servers, true, 'a stored pipeline loses no tools');
    assert.equal((await binding(opened)).enable_all_mcp_servers, true, 'LangBot\'s key still opts into every server');
    // Applying again changes nothing: the decided values are stable.
    assert.deepEqual((await syncConfigFile(prisma, file)).summary.pipelines.unchanged.sort(), [fresh, legacy, opened].sort());
  } finally {
    await prisma.pipeline.deleteMany({ where: { id: { in: [fresh, legacy, opened] } } });
    rmSync(dir, { recursive: true, force: true });
  }
});
