import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { HEADERS, PluginHostReply, topology } from '@conveyor/contracts';
import { HostError, messageText, runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { KnowledgeStore, createDatabase, closeDatabase, type Database } from '@conveyor/persistence';
import { unitVector } from '@conveyor/agent';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { fakeEmbedding } from '../fakes/openai-server.js';

/**
 * The plugin host API through the real runner: a plugin written with the SDK keeps its own storage,
 * asks a bound pipeline's model (whole and streamed), embeds, reranks and retrieves from a bound
 * pipeline's knowledge base; what is not the plugin's to use is refused with a code and audited.
 */
describe('plugin host API', () => {
  let sys: TestSystem;
  let db: Database;
  let plugin: RunningPlugin;
  let other: RunningPlugin;
  const kbId = uniqueName('kb');
  const unboundPipeline = uniqueName('pipeline');
  const unboundBot = uniqueName('bot');
  const names = { plugin: `acme/${uniqueName('host')}`, other: `acme/${uniqueName('other')}` };

  before(async () => {
    sys = await startTestSystem({ startServices: false, pipelineConfig: { ai: { 'local-agent': { 'knowledge-bases': [kbId] } } } });
    db = createDatabase(sys.db.url, 2);
    await db.prisma.llmModel.create({ data: { id: `${kbId}-embed`, name: 'embed', baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: 'fake-embed', abilities: ['embedding'] } });
    await db.prisma.llmModel.create({ data: { id: `${kbId}-rerank`, name: 'rerank', baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: 'fake-rerank', abilities: ['rerank'] } });
    await db.prisma.knowledgeBase.create({ data: { id: kbId, name: 'Handbook', embeddingModelId: `${kbId}-embed` } });
    await db.prisma.knowledgeBase.create({ data: { id: `${kbId}-private`, name: 'Private', embeddingModelId: `${kbId}-embed` } });
    const store = new KnowledgeStore(db);
    for (const [kb, texts] of [[kbId, ['Parking is free for visitors on level two.', 'The office opens at nine in the morning.']], [`${kbId}-private`, ['Salaries are paid on the 25th.']]] as const) {
      const doc = await store.addDocument(kb, 'a.txt', 'text', Buffer.from(kb));
      await store.complete({ id: doc.id, knowledgeBaseId: kb, revision: doc.revision }, texts.map((text) => ({ text, embedding: unitVector(fakeEmbedding(text)) })));
    }
    await db.prisma.pipeline.create({ data: { id: unboundPipeline, name: unboundPipeline, stages: (await db.prisma.pipeline.findUniqueOrThrow({ where: { id: 'default' } })).stages ?? [], config: { ai: { 'local-agent': { model: { primary: 'fake', fallbacks: [] } } } }, extensionsPreferences: { enable_all_plugins: false, plugins: [names.other] } } });
    await Promise.all([sys.services.start('runner'), sys.services.start('dispatcher')]);
    const defaultBot = await db.prisma.bot.findUniqueOrThrow({ where: { id: sys.botId } });
    await db.prisma.bot.create({ data: { id: unboundBot, name: unboundBot, adapter: 'http-bot', adapterConfig: defaultBot.adapterConfig ?? {}, pipelineId: unboundPipeline, enabled: true } });
    plugin = await runPlugin({ name: names.plugin, prefix: sys.prefix, natsUrl: NATS_URL, tools: [{ name: 'noop', description: 'nothing', parameters: { type: 'object' }, handler: () => 'ok' }] });
    other = await runPlugin({ name: names.other, prefix: sys.prefix, natsUrl: NATS_URL, tools: [{ name: 'noop2', description: 'nothing', parameters: { type: 'object' }, handler: () => 'ok' }] });
  });
  after(async () => {
    await plugin?.stop();
    await other?.stop();
    if (db) await closeDatabase(db);
    await sys?.stop();
  });

  const refused = (code: string) => (err: unknown) => err instanceof HostError && err.code === code;

  test('storage: each plugin reads and writes only its own keys; a value over the bound is refused and nothing else changes', async () => {
    await plugin.host.storage.set('visits:alice', '3');
    await plugin.host.storage.set('visits:bob', '{"n":1}');
    await other.host.storage.set('visits:alice', 'other plugin');
    assert.equal(await plugin.host.storage.get('visits:alice'), '3');
    assert.equal(await other.host.storage.get('visits:alice'), 'other plugin');
    assert.equal(await plugin.host.storage.get('missing'), null);
    assert.deepEqual(await plugin.host.storage.list('visits:'), ['visits:alice', 'visits:bob']);
    await assert.rejects(plugin.host.storage.set('big', 'x'.repeat(262_145)), refused('too_large'));
    assert.equal(await plugin.host.storage.delete('visits:bob'), true);
    assert.deepEqual(await plugin.host.storage.list(), ['visits:alice']);
    const rows = await db.prisma.pluginStorageEntry.findMany({ where: { plugin: names.plugin } });
    assert.deepEqual(rows.map((r) => [r.key, r.value]), [['visits:alice', '3']], 'stored in Postgres under the plugin');
  });

  test('llm.invoke: a bound pipeline\'s model answers, whole and streamed', async () => {
    sys.llm.script({ text: 'Hello from the model' });
    const whole = await plugin.host.invokeLlm('default', [{ role: 'user', content: 'hi' }]);
    assert.equal(messageText(whole.message), 'Hello from the model');
    assert.equal(whole.model, 'fake');
    assert.deepEqual(sys.llm.requests.at(-1)!.body.messages, [{ role: 'user', content: 'hi' }]);

    sys.llm.script({ text: 'one two three four five six', chunkSize: 4 });
    const deltas: string[] = [];
    const streamed = await plugin.host.invokeLlm('default', [{ role: 'user', content: 'count' }], { onDelta: (d) => deltas.push(d) });
    assert.ok(deltas.length > 1, `the text came in pieces: ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(''), 'one two three four five six');
    assert.equal(messageText(streamed.message), 'one two three four five six');
  });

  test('a pipeline or knowledge base not bound to the plugin is refused and audited; unknown ones are not found', async () => {
    const requests = sys.llm.requests.length;
    await assert.rejects(plugin.host.invokeLlm(unboundPipeline, [{ role: 'user', content: 'hi' }]), refused('forbidden'));
    await assert.rejects(plugin.host.retrieve(`${kbId}-private`, 'salary'), refused('forbidden'));
    assert.equal(sys.llm.requests.length, requests, 'the model was not called');
    const audit = await db.prisma.auditEntry.findMany({ where: { actor: `plugin:${names.plugin}` }, orderBy: { id: 'asc' } });
    assert.deepEqual(audit.map((a) => [a.resource, a.resourceId, a.action]), [
      ['plugin-host', `pipeline:${unboundPipeline}`, 'refused llm.invoke'],
      ['plugin-host', `knowledge-base:${kbId}-private`, 'refused knowledge.retrieve'],
    ]);
    await assert.rejects(plugin.host.invokeLlm(uniqueName('nope'), [{ role: 'user', content: 'hi' }]), refused('not_found'));
    await assert.rejects(plugin.host.retrieve(uniqueName('nope'), 'x'), refused('not_found'));
    // The other plugin is bound to that pipeline.
    sys.llm.script({ text: 'for the other plugin' });
    assert.equal(messageText((await other.host.invokeLlm(unboundPipeline, [{ role: 'user', content: 'hi' }])).message), 'for the other plugin');
  });

  test('embeddings, rerank and retrieval by the models and knowledge base the plugin may use', async () => {
    const [vector] = await plugin.host.embed(`${kbId}-embed`, ['where to park']);
    assert.equal(vector!.length, 64);
    assert.ok(Math.abs(Math.hypot(...vector!) - 1) < 1e-5, 'unit length');
    await assert.rejects(plugin.host.embed('fake', ['x']), refused('invalid'), 'a model without the embedding ability');
    const ranked = await plugin.host.rerank(`${kbId}-rerank`, 'office opens', ['parking on level two', 'the office opens at nine']);
    assert.equal(ranked.length, 2);
    assert.equal([...ranked].sort((a, b) => b.score - a.score)[0]!.index, 1);
    const chunks = await plugin.host.retrieve(kbId, 'where can visitors park for free', 1);
    assert.deepEqual(chunks.map((c) => c.text), ['Parking is free for visitors on level two.']);
  });

  test('message.send: a message reaches a chat of a bot whose pipeline binds the plugin; another bot is refused and audited', async () => {
    const chat = uniqueName('user');
    await plugin.host.sendMessage(sys.botId, { type: 'person', id: chat }, [{ type: 'Plain', text: 'Your order shipped.' }]);
    const callback = (await sys.callbacks.waitFor((all) => all.some((c) => c.json?.session_id === chat), 30_000)).find((c) => c.json?.session_id === chat)!;
    assert.deepEqual(callback.json.message, [{ type: 'Plain', text: 'Your order shipped.' }]);
    assert.equal(callback.json.is_final, true);

    await assert.rejects(plugin.host.sendMessage(unboundBot, { type: 'person', id: chat }, [{ type: 'Plain', text: 'nope' }]), refused('forbidden'));
    await assert.rejects(plugin.host.sendMessage(uniqueName('missing'), { type: 'person', id: chat }, [{ type: 'Plain', text: 'nope' }]), refused('not_found'));
    await assert.rejects(plugin.host.sendMessage(sys.botId, { type: 'person', id: chat }, []), refused('invalid'));
    const audit = await db.prisma.auditEntry.findMany({ where: { actor: `plugin:${names.plugin}`, resourceId: `bot:${unboundBot}` } });
    assert.deepEqual(audit.map((a) => a.action), ['refused message.send']);
    assert.equal((await sys.callbacks.waitFor(() => true)).filter((c) => c.json?.session_id === chat).length, 1, 'only the allowed message went out');
  });

  test('bad input: a request naming another plugin than its subject, or not matching the schema, gets a clear error', async () => {
    const nc: NatsConnection = await connect({ servers: NATS_URL, name: 'host-api-test' });
    try {
      const subjects = topology(sys.prefix).subjects.plugins;
      const ask = async (subject: string, body: unknown) => {
        const headers = natsHeaders();
        const reply = await nc.request(subject, new TextEncoder().encode(JSON.stringify(body)), { timeout: 30_000, headers });
        assert.equal(reply.headers?.get(HEADERS.schema), 'PluginHostReply/1');
        return PluginHostReply.parse(JSON.parse(new TextDecoder().decode(reply.data)));
      };
      const impostor = await ask(subjects.host(names.other), { v: 1, plugin: names.plugin, op: 'storage.get', key: 'visits:alice' });
      assert.deepEqual(impostor.ok ? null : impostor.error.code, 'forbidden');
      const bad = await ask(subjects.host(names.plugin), { v: 1, plugin: names.plugin, op: 'storage.set', key: '' });
      assert.ok(!bad.ok && bad.error.code === 'invalid' && /key|value/.test(bad.error.message), JSON.stringify(bad));
      const notJson = await nc.request(subjects.host(names.plugin), new TextEncoder().encode('{'), { timeout: 30_000 });
      assert.deepEqual(PluginHostReply.parse(JSON.parse(new TextDecoder().decode(notJson.data))), { v: 1, ok: false, error: { code: 'invalid', message: 'the request is not JSON' } });
    } finally {
      await nc.close();
    }
  });
});
