// Knowledge bases end to end: documents ingested through the bus by the runner, then a pipeline bound
// to the knowledge base answers with LangBot's combined prompt in place of the user's text.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, closeDatabase, KnowledgeStore, type Database } from '@conveyor/persistence';
import { RAG_COMBINED_PROMPT_TEMPLATE, unitVector } from '@conveyor/agent';
import { fakeEmbedding } from '../fakes/openai-server.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { sample } from '../harness/metrics.js';
import { finalReply, send, text } from './pipeline-support.js';

const HANDBOOK = [
  'The office opens at nine in the morning.',
  'Parking is free for visitors on level two.',
  'The cafeteria serves lunch from noon.',
  'Wifi password is printed on the badge.',
].join('\n\n');

const userContent = (body: { messages?: { role: string; content?: unknown }[] }) => body.messages?.filter((m) => m.role === 'user').at(-1)?.content;

describe('knowledge bases', () => {
  let sys: TestSystem;
  let db: Database;
  let store: KnowledgeStore;

  before(async () => {
    sys = await startTestSystem({
      pipelineConfig: { ai: { 'local-agent': { 'knowledge-bases': ['handbook'], 'rerank-model': 'rerank', 'rerank-top-k': 2 } } },
      serviceEnv: { KNOWLEDGE_SWEEP_MS: '300' },
    });
    db = createDatabase(sys.db.url, 2);
    store = new KnowledgeStore(db);
    const model = (id: string, ability: string) => ({ id, name: id, baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: `fake-${id}`, abilities: [ability] });
    await db.prisma.llmModel.createMany({ data: [model('embed', 'embedding'), model('rerank', 'rerank')] });
    await db.prisma.knowledgeBase.create({ data: { id: 'handbook', name: 'Handbook', embeddingModelId: 'embed', topK: 3, chunkSize: 60, chunkOverlap: 0 } });
  });

  after(async () => {
    if (db) await closeDatabase(db);
    await sys?.stop();
  });

  test('a document added as setup adds it is ingested through the bus to done, and its chunks are searchable', async () => {
    const doc = await store.addDocument('handbook', 'handbook.md', 'markdown', Buffer.from(HANDBOOK));
    // No publish here: the runner's sweep finds the pending document and publishes its job.
    const state = await waitUntil('the document to be ingested', async () => {
      const d = await store.document(doc.id);
      return d && (d.status === 'done' || d.status === 'failed') ? d : undefined;
    }, 30_000);
    assert.deepEqual([state.status, state.progress, state.error], ['done', 100, null]);
    const chunks = await db.prisma.knowledgeChunk.findMany({ where: { documentId: doc.id }, orderBy: { position: 'asc' } });
    assert.deepEqual(chunks.map((c) => c.text), HANDBOOK.split('\n\n'), 'one chunk per paragraph at chunk size 60');
    assert.ok(chunks.every((c) => c.embedding.length === 64));
    const question = 'where can visitors park for free';
    const hits = await store.search('handbook', { text: question, embedding: unitVector(fakeEmbedding(question)) }, 1, 'vector');
    assert.equal(hits[0]?.text, 'Parking is free for visitors on level two.');
    assert.deepEqual((await store.search('handbook', { text: question }, 1, 'fulltext')).map((h) => h.text), ['Parking is free for visitors on level two.'], 'the chunks carry their search terms');
  });

  test("the model receives LangBot's combined prompt with the reranked chunks; history keeps the user's words", async () => {
    const question = 'When does the office open in the morning?';
    const before = sys.llm.requests.length;
    const replyTo = await send(sys, text('kb-chat', question));
    await finalReply(sys, replyTo);
    const request = sys.llm.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'))!;
    const content = String(userContent(request.body));
    const [head] = RAG_COMBINED_PROMPT_TEMPLATE.split('{rag_context}');
    assert.ok(content.startsWith(`${head}[1] The office opens at nine in the morning.\n\n[2] `), content);
    assert.ok(!content.includes('[3] '), 'rerank-top-k 2 keeps two entries');
    assert.ok(content.endsWith(`</context>\n\n<user_message>\n${question}\n</user_message>\n`), content);
    // The knowledge base's top 3 went to the rerank model with the question.
    const rerank = sys.llm.rerankRequests.at(-1)!;
    assert.equal(rerank.query, question);
    assert.equal(rerank.documents?.length, 3);
    assert.equal(rerank.model, 'fake-rerank');
    const stored = await waitUntil('the turn in history', () => db.prisma.conversationMessage.findFirst({ where: { role: 'user', content: { equals: question } } }).then((m) => m ?? undefined), 15_000);
    assert.equal(stored.content, question);
    // The GenAI conventions' retrieval step, with the embedding and rerank calls as model calls inside it.
    const spans = await sys.otlp.waitFor((all) => {
      const retrieval = all.find((s) => s.name === 'retrieval' && s.attributes['conveyor.knowledge.hits'] === 2);
      return !!retrieval && ['embeddings fake-embed', 'rerank fake-rerank'].every((n) => all.some((s) => s.name === n && s.parentSpanId === retrieval.spanId));
    }, 20_000);
    const span = spans.find((s) => s.name === 'retrieval' && s.attributes['conveyor.knowledge.hits'] === 2)!;
    assert.equal(span.attributes['gen_ai.operation.name'], 'retrieval');
    assert.equal(span.attributes['gen_ai.data_source.id'], 'handbook');
    assert.deepEqual(span.attributes['conveyor.knowledge.base_ids'], ['handbook']);
    const embed = spans.find((s) => s.name === 'embeddings fake-embed' && s.parentSpanId === span.spanId)!;
    const server = new URL(sys.llm.url);
    assert.equal(embed.kindName, 'CLIENT');
    assert.equal(embed.attributes['gen_ai.operation.name'], 'embeddings');
    assert.equal(embed.attributes['gen_ai.provider.name'], 'openai_compatible');
    assert.equal(embed.attributes['gen_ai.request.model'], 'fake-embed');
    assert.equal(embed.attributes['server.address'], server.hostname);
    assert.equal(embed.attributes['server.port'], Number(server.port));
    assert.equal(embed.attributes['gen_ai.embeddings.dimension.count'], 64);
    assert.ok(Number(embed.attributes['gen_ai.usage.input_tokens']) > 0, 'the tokens the embedding model counted');
    assert.equal(embed.attributes['conveyor.bot.id'], sys.botId);
    assert.equal(embed.attributes['error.type'], undefined);
    const reranked = spans.find((s) => s.name === 'rerank fake-rerank' && s.parentSpanId === span.spanId)!;
    assert.equal(reranked.attributes['gen_ai.operation.name'], 'rerank');
    assert.ok(Number(reranked.attributes['gen_ai.usage.input_tokens']) > 0);
    assert.ok(!JSON.stringify([span, embed, reranked].map((s) => s.attributes)).includes(question), 'no question text on the spans');

    // Counted with the chat calls' metrics and dimensions, bot and pipeline included.
    const labels = (operation: string, model: string) => ({ gen_ai_operation_name: operation, gen_ai_request_model: model, gen_ai_provider_name: 'openai_compatible', conveyor_bot_id: sys.botId, conveyor_pipeline_id: 'default' });
    const metrics = await waitUntil('embedding and rerank metrics', async () => {
      const body = await (await fetch(`${sys.services.get('runner').url}/metrics`)).text();
      return (sample(body, 'gen_ai_client_token_usage_sum', { ...labels('rerank', 'fake-rerank'), gen_ai_token_type: 'input' }) ?? 0) > 0 ? body : undefined;
    }, 30_000, 250);
    assert.ok((sample(metrics, 'gen_ai_client_token_usage_sum', { ...labels('embeddings', 'fake-embed'), gen_ai_token_type: 'input' }) ?? 0) > 0, 'embedding input tokens');
    assert.ok((sample(metrics, 'gen_ai_client_operation_duration_count', labels('embeddings', 'fake-embed')) ?? 0) >= 1, 'embedding call duration');
    assert.ok((sample(metrics, 'gen_ai_client_operation_duration_count', labels('rerank', 'fake-rerank')) ?? 0) >= 1, 'rerank call duration');
  });

  test('a failing embedding endpoint: a document fails after bounded tries, and a chat goes on without context', async () => {
    sys.llm.failEmbeddings({ status: 500, message: 'embedding backend down' });
    try {
      const before = sys.llm.embeddingRequests.length;
      const doc = await store.addDocument('handbook', 'broken.txt', 'text', Buffer.from('A short note about the broken document.'));
      const state = await waitUntil('the document to fail', async () => {
        const d = await store.document(doc.id);
        return d?.status === 'failed' ? d : undefined;
      }, 30_000);
      assert.match(state.error ?? '', /embedding model embed failed: 500 .*embedding backend down \(after 3 tries\)/);
      const tries = sys.llm.embeddingRequests.slice(before).filter((r) => JSON.stringify(r.input).includes('broken document'));
      assert.equal(tries.length, 3, 'three tries, no more');
      const failedSpans = await sys.otlp.waitFor((all) => all.filter((x) => x.name === 'embeddings fake-embed' && x.attributes['error.type'] === '500').length >= 3, 20_000);
      assert.equal(failedSpans.find((x) => x.attributes['error.type'] === '500')?.status.code, 2, 'a failed embedding call is an error span');
      assert.equal(await db.prisma.knowledgeChunk.count({ where: { documentId: doc.id } }), 0);

      const question = 'Is the office open?';
      const sent = sys.llm.requests.length;
      const replyTo = await send(sys, text('kb-down', question));
      const reply = await finalReply(sys, replyTo);
      assert.ok(JSON.stringify(reply.json).includes(`Echo: ${question}`), JSON.stringify(reply.json));
      const request = sys.llm.requests.slice(sent).find((r) => r.path.endsWith('/chat/completions'))!;
      assert.equal(userContent(request.body), question, 'the user text goes to the model unchanged');
    } finally {
      sys.llm.failEmbeddings(undefined);
    }
  });
});
