import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { RAG_COMBINED_PROMPT_TEMPLATE } from '@conveyor/agent';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { AdminClient, startAdmin } from '../admin/admin-support.js';
import { finalReply, send, text } from './pipeline-support.js';

/**
 * A knowledge base backed by a plugin's retriever (LangBot's KnowledgeRetriever component) through the
 * whole system: created through the admin API against the live plugin, bound by the pipeline, asked by
 * the runner for each question, its chunks in LangBot's combined prompt; a plugin that is gone costs
 * the retrieval only.
 */
describe('knowledge from a plugin retriever', () => {
  let sys: TestSystem;
  let api: AdminClient;
  let plugin: RunningPlugin | undefined;
  const kbId = uniqueName('kb');
  const name = `acme/${uniqueName('wiki')}`;
  const asked: Array<{ query: string; topK: number; knowledgeBaseId: string; pipelineId: string }> = [];

  const userContent = () => {
    const request = sys.llm.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!;
    const user = [...(request.body.messages ?? [])].reverse().find((m) => m.role === 'user');
    return String(user?.content);
  };

  before(async () => {
    sys = await startTestSystem({ pipelineConfig: { ai: { 'local-agent': { 'knowledge-bases': [kbId] } } } });
    const admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    plugin = await runPlugin({
      name, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
      retrievers: [{
        name: 'wiki',
        description: 'The company wiki',
        handler: (query, topK, ctx) => {
          asked.push({ query, topK, knowledgeBaseId: ctx.knowledgeBaseId, pipelineId: ctx.pipelineId });
          return [{ text: 'The wiki says: parking is on level two.', score: 0.9 }, { text: 'The wiki says: the lobby opens at eight.' }, { text: 'never used: past topK' }];
        },
      }],
    });
    await waitUntil('the admin hears the plugin', async () => AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.find((p) => p.name === name && p.retrievers.includes('wiki')), 30_000);
  });
  after(async () => {
    await plugin?.stop();
    await sys?.stop();
  });

  test('created against the live plugin\'s retriever; no documents; a missing retriever or both sources refused', async () => {
    const refusals = [
      [{ id: kbId, name: 'Wiki', retriever: { plugin: name, name: 'nope' } }, 'body.retriever.name'],
      [{ id: kbId, name: 'Wiki', retriever: { plugin: `acme/${uniqueName('gone')}`, name: 'wiki' } }, 'body.retriever.plugin'],
      [{ id: kbId, name: 'Wiki', retriever: { plugin: name, name: 'wiki' }, embeddingModelId: 'fake' }, 'body.embeddingModelId'],
    ] as const;
    for (const [body, field] of refusals) {
      const res = await api.call('POST', '/knowledge-bases', body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.field, field, JSON.stringify(res.body));
    }
    const created = await api.call('POST', '/knowledge-bases', { id: kbId, name: 'Wiki', retriever: { plugin: name, name: 'wiki' }, topK: 2 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(AdminApi.KnowledgeBase.parse(created.body).retriever, { plugin: name, name: 'wiki' });
    const form = new FormData();
    form.append(AdminApi.KNOWLEDGE_UPLOAD_FIELD, new Blob(['x']), 'a.txt');
    const upload = await fetch(`${api.baseUrl}/api/v1/knowledge-bases/${kbId}/documents`, { method: 'POST', body: form, headers: { cookie: api.sessionCookie() ?? '' } });
    assert.equal(upload.status, 409);
    assert.equal((await api.call('PATCH', `/knowledge-bases/${kbId}`, { chunkSize: 100 })).status, 400, 'no chunking of its own');
  });

  test('a question is answered with the retriever\'s chunks, the knowledge base\'s top-k of them, in LangBot\'s combined prompt', async () => {
    const question = 'Where do visitors park?';
    await finalReply(sys, await send(sys, text(uniqueName('chat'), question)));
    assert.deepEqual(asked.at(-1), { query: question, topK: 2, knowledgeBaseId: kbId, pipelineId: 'default' });
    const content = userContent();
    const [head] = RAG_COMBINED_PROMPT_TEMPLATE.split('{rag_context}');
    assert.ok(content.startsWith(`${head}[1] The wiki says: parking is on level two.\n\n[2] The wiki says: the lobby opens at eight.\n</context>`), content);
    assert.ok(!content.includes('never used'));
  });

  test('with the plugin gone, the message is answered without retrieved context and the failure is logged', async () => {
    await plugin!.stop();
    plugin = undefined;
    const question = 'Is the lobby open?';
    const reply = await finalReply(sys, await send(sys, text(uniqueName('chat'), question)));
    assert.ok(reply.json.is_final);
    assert.equal(userContent(), question, 'the model got the question alone');
    await waitUntil('the failure logged', () => sys.services.get('runner').logs.some((l) => l.includes('knowledge retrieval failed') && l.includes(name)) || undefined, 30_000);
  });
});
