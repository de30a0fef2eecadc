import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AdminApi, topology } from '@conveyor/contracts';
import { DEFAULT_PIPELINE_STAGES } from '@conveyor/pipeline';
import { publishConfigChanged } from '@conveyor/bus';
import { useTempDatabase } from '@conveyor/persistence/testing';
import { ConfigCache, ConfigReadModel } from './read-model.js';

const database = useTempDatabase();
let nc: NatsConnection;
const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined };

before(async () => {
  nc = await connect({ servers: process.env.NATS_URL || 'nats://127.0.0.1:4222' });
});
after(async () => {
  await nc?.drain();
});

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function seed() {
  const prisma = database().prisma;
  const pipeline = await prisma.pipeline.create({ data: { id: randomUUID(), name: 'p', stages: [...DEFAULT_PIPELINE_STAGES], config: { ai: { 'dify-service-api': { 'api-key': 'env:X' } } } } });
  const bot = await prisma.bot.create({ data: { name: 'b', adapter: 'http-bot', adapterConfig: { secret: 's3cret' }, pipelineId: pipeline.id } });
  return { prisma, pipeline, bot };
}

test('rows are read once and kept, a missing one too, until the event naming them arrives over NATS', async () => {
  const { prisma, pipeline, bot } = await seed();
  const subject = topology(`readmodel${randomUUID().slice(0, 8)}`).subjects.configChanged;
  const model = new ConfigReadModel(prisma);
  model.subscribe(nc, subject, quiet);
  await nc.flush();

  assert.equal((await model.bot(bot.id))?.adapter, 'http-bot');
  const missing = randomUUID();
  assert.equal(await model.bot(missing), null);
  const bp = await model.botPipeline(bot.id);
  assert.ok(bp?.ok, 'the default stages validate');
  assert.equal(bp.pipelineId, pipeline.id);

  // Written behind the read model's back: the cached rows stay (a missing bot stays missing).
  await prisma.bot.update({ where: { id: bot.id }, data: { enabled: false } });
  await prisma.bot.create({ data: { id: missing, name: 'late', adapter: 'http-bot', adapterConfig: {}, pipelineId: pipeline.id } });
  assert.equal((await model.bot(bot.id))?.enabled, true);
  assert.equal((await model.botPipeline(bot.id))?.enabled, true);
  assert.equal(await model.bot(missing), null);

  publishConfigChanged(nc, subject, { version: 1, kind: 'bot', id: bot.id, revision: 2 });
  await until('the bot is read again', async () => (await model.bot(bot.id))?.enabled === false);
  assert.equal((await model.botPipeline(bot.id))?.enabled, false, 'its pipeline entry went with it');
  assert.equal(await model.bot(missing), null, 'another bot stays cached');

  // A pipeline's change may concern any bot: every bot's pipeline is read again.
  await prisma.pipeline.update({ where: { id: pipeline.id }, data: { stages: ['NoSuchStage'] } });
  publishConfigChanged(nc, subject, { version: 1, kind: 'pipeline', id: pipeline.id, revision: 2 });
  await until('the pipeline is rejected', async () => (await model.botPipeline(bot.id))?.ok === false);
});

test('models: the key is resolved, the abilities need no key, an unusable key fails each ask and is not kept', async () => {
  const { prisma } = await seed();
  const id = randomUUID();
  process.env.CONVEYOR_KEY_READMODEL_TEST = 'sk-test';
  await prisma.llmModel.create({ data: { id, name: 'm', baseUrl: 'http://x', apiKeyRef: 'env:CONVEYOR_KEY_READMODEL_UNSET', modelId: 'gpt', abilities: ['vision'], inputPricePerMTok: 2 } });
  const model = new ConfigReadModel(prisma);
  assert.deepEqual(await model.modelAbilities(id), ['vision']);
  await assert.rejects(model.model(id), /CONVEYOR_KEY_READMODEL_UNSET/);
  await assert.rejects(model.model(id), /CONVEYOR_KEY_READMODEL_UNSET/);
  await prisma.llmModel.update({ where: { id }, data: { apiKeyRef: 'env:CONVEYOR_KEY_READMODEL_TEST' } });
  model.invalidate({ version: 1, kind: 'model', id, revision: 2 });
  const resolved = await model.model(id);
  assert.equal(resolved?.apiKey, 'sk-test');
  assert.equal(resolved?.provider, 'openai');
  assert.deepEqual(resolved?.pricing, { inputPerMTok: 2, outputPerMTok: 0 });
  assert.equal(await model.model(randomUUID()), null);
  assert.equal(await model.model('bad\u0000id'), null, 'an id Postgres cannot store is unknown, not an error');
});

test('MCP servers, pipeline settings and instance settings are dropped by their own kind, everything by a reset', async () => {
  const { prisma, pipeline } = await seed();
  const model = new ConfigReadModel(prisma);
  const mcp = randomUUID();
  await prisma.mcpServer.create({ data: { id: mcp, name: 'tools', transport: 'http', config: { url: 'http://x' } } });
  await prisma.mcpServer.create({ data: { id: randomUUID(), name: 'future', transport: 'websocket', config: {} } });
  assert.deepEqual((await model.mcpServers()).map((s) => s.id), [mcp], 'an unknown transport is left out');
  assert.deepEqual(await model.instanceSettings(), { ok: true, values: AdminApi.InstanceSettingsValues.parse({}) });
  assert.ok(await model.pipelineConfig(pipeline.id));

  await prisma.mcpServer.update({ where: { id: mcp }, data: { enabled: false } });
  await prisma.instanceSettings.create({ data: { id: AdminApi.INSTANCE_SETTINGS_ID, values: { notAKnownSetting: 1 } } });
  await prisma.pipeline.update({ where: { id: pipeline.id }, data: { config: { changed: true } } });
  model.invalidate({ version: 1, kind: 'bot', id: randomUUID(), revision: 1 });
  assert.equal((await model.mcpServers()).length, 1, 'a bot event leaves the MCP servers cached');

  model.invalidate({ version: 1, kind: 'mcp-server', id: mcp, revision: 2 });
  assert.equal((await model.mcpServers()).length, 0);
  assert.equal((await model.instanceSettings()).ok, true, 'the settings are still the cached ones');
  model.invalidate({ version: 1, kind: 'settings', id: AdminApi.INSTANCE_SETTINGS_ID, revision: 2 });
  const settings = await model.instanceSettings();
  assert.equal(settings.ok, false, 'invalid stored settings come with their issues');

  assert.deepEqual(await model.pipelineConfig(pipeline.id), { config: { ai: { 'dify-service-api': { 'api-key': 'env:X' } } } });
  model.invalidate(undefined);
  assert.deepEqual(await model.pipelineConfig(pipeline.id), { config: { changed: true } });
});

test('a TTL of 0 for bots keeps none: every ask reads Postgres', async () => {
  const { prisma, bot } = await seed();
  const model = new ConfigReadModel(prisma, { botTtlMs: 0 });
  assert.equal((await model.bot(bot.id))?.enabled, true);
  await prisma.bot.update({ where: { id: bot.id }, data: { enabled: false } });
  assert.equal((await model.bot(bot.id))?.enabled, false);
});

test('ConfigCache: concurrent asks share one read, a missing row is remembered, a failed read is not kept, an expired row is read again', async () => {
  const reads: string[] = [];
  let failNext = false;
  const cache = new ConfigCache<{ name: string }>(async (key) => {
    reads.push(key);
    if (failNext) {
      failNext = false;
      throw new Error('database down');
    }
    return key === 'ghost' ? null : { name: key };
  }, 200, 10);
  const [a, b] = await Promise.all([cache.get('k'), cache.get('k')]);
  assert.deepEqual([a, b], [{ name: 'k' }, { name: 'k' }]);
  assert.equal(await cache.get('ghost'), null);
  assert.equal(await cache.get('ghost'), null);
  assert.deepEqual(reads, ['k', 'ghost']);

  failNext = true;
  await assert.rejects(cache.get('other'), /database down/);
  assert.deepEqual(await cache.get('other'), { name: 'other' }, 'the failure was not cached');

  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && reads.filter((k) => k === 'k').length < 2) {
    await new Promise((r) => setTimeout(r, 50));
    await cache.get('k');
  }
  assert.equal(reads.filter((k) => k === 'k').length, 2, 'read again once the TTL passed');
});

test('enabled bots are listed by name from Postgres on every ask, disabled ones left out', async () => {
  const { prisma, bot, pipeline } = await seed();
  const model = new ConfigReadModel(prisma);
  const before = await model.enabledBots();
  assert.ok(before.some((b) => b.id === bot.id && b.adapter === 'http-bot'));
  const added = await prisma.bot.create({ data: { name: 'a-first', adapter: 'telegram', adapterConfig: { token: 't' }, pipelineId: pipeline.id } });
  await prisma.bot.update({ where: { id: bot.id }, data: { enabled: false } });
  const after = await model.enabledBots();
  assert.ok(after.some((b) => b.id === added.id), 'a bot added without an announcement is listed');
  assert.ok(!after.some((b) => b.id === bot.id), 'a disabled bot is not');
  const names = after.map((b) => b.name);
  assert.deepEqual(names, [...names].sort());
});
