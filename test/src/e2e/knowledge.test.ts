// Knowledge bases end to end: documents ingested through the bus by the runner, then a pipeline bound
// to the knowledge base answers with LangBot's combined prompt in place of the user's text.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, closeDatabase, KnowledgeStore, type Database } from '@conveyor/persistence';
import { RAG_COMBINED_PROMPT_TEMPLATE, unitVector } from '@conveyor/agent';
import { fakeEmbedding } from '../fakes/openai-server.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
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
    const hits = await store.search('handbook', unitVector(fakeEmbedding('where can visitors park for free')), 1);
    assert.equal(hits[0]?.text, 'Parking is free for visitors on level two.');
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
    const spans = await sys.otlp.waitFor((all) => all.some((s) => s.name === 'knowledge retrieval'), 20_000);
    const span = spans.find((s) => s.name === 'knowledge retrieval')!;
    assert.deepEqual(span.attributes['conveyor.knowledge.base_ids'], ['handbook']);
    assert.equal(span.attributes['conveyor.knowledge.hits'], 2);
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
