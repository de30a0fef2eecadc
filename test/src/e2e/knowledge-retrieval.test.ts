// withKnowledge against the real knowledge store (Postgres) and the fake OpenAI-compatible server:
// the edges of LangBot's retrieval step that the end-to-end chat does not reach.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAIClientPool, RAG_COMBINED_PROMPT_TEMPLATE, unitVector, withKnowledge, type ResolvedModel } from '@conveyor/agent';
import type { LlmMessage, RunRequest } from '@conveyor/contracts';
import { closeDatabase, createDatabase, KnowledgeStore, type Database } from '@conveyor/persistence';
import { createTempDatabase, type TempDatabase } from '@conveyor/persistence/testing';
import { fakeEmbedding, startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';

let temp: TempDatabase;
let db: Database;
let store: KnowledgeStore;
let llm: FakeOpenAI;
const warnings: Array<{ obj: object; msg: string }> = [];
const logger = { info: () => undefined, warn: (obj: object, msg: string) => void warnings.push({ obj, msg }), error: () => undefined };
const pool = new OpenAIClientPool();

const model = (id: string): ResolvedModel => ({ id, baseUrl: llm.url, apiKey: 'k', modelId: `fake-${id}`, abilities: [], extraArgs: {}, timeoutMs: 5_000 });
const deps = () => ({ source: store, model: async (id: string) => (id === 'embed' || id === 'rerank' ? model(id) : null), pool, logger });
const run = (content: LlmMessage['content'], knowledge: RunRequest['knowledge']) => ({
  queryId: '00000000-0000-4000-8000-000000000001',
  messages: [{ role: 'system' as const, content: 'sys' }, { role: 'user' as const, content }],
  knowledge,
});

async function addChunks(kb: string, texts: string[]) {
  const doc = await store.addDocument(kb, `${kb}.txt`, 'text', Buffer.from(texts.join('|')));
  await store.complete({ id: doc.id, knowledgeBaseId: kb, revision: doc.revision }, texts.map((text) => ({ text, embedding: unitVector(fakeEmbedding(text)) })));
}

before(async () => {
  temp = await createTempDatabase();
  db = createDatabase(temp.url, 2);
  store = new KnowledgeStore(db);
  llm = await startFakeOpenAI({ apiKey: 'k' });
  await db.prisma.knowledgeBase.createMany({
    data: [
      { id: 'pets', name: 'pets', embeddingModelId: 'embed', topK: 2 },
      { id: 'food', name: 'food', embeddingModelId: 'embed', topK: 1 },
    ],
  });
  await addChunks('pets', ['cats sleep all day', 'dogs need a walk', 'fish need clean water']);
  await addChunks('food', ['cats eat fish', 'bread needs an oven']);
});

after(async () => {
  await llm?.close();
  if (db) await closeDatabase(db);
  await temp?.drop();
});

test('knowledge bases in order, a missing one skipped, entries numbered across them; one embedding request per model', async () => {
  const embeddingsBefore = llm.embeddingRequests.length;
  const messages = await withKnowledge(run('what do cats do all day', { knowledgeBaseIds: ['pets', 'gone', 'food'], rerankModel: '', rerankTopK: 5 }), deps());
  const text = String(messages[1].content);
  const context = /<context>\n([\s\S]*)\n<\/context>/.exec(text)![1];
  assert.deepEqual(context.split('\n\n'), ['[1] cats sleep all day', '[2] dogs need a walk', '[3] cats eat fish']);
  assert.ok(text.startsWith(RAG_COMBINED_PROMPT_TEMPLATE.slice(0, 40)));
  assert.equal(messages[0].content, 'sys', 'only the user turn changes');
  assert.equal(llm.embeddingRequests.length - embeddingsBefore, 1);
  assert.ok(warnings.some((w) => w.msg === 'Knowledge base gone not found, skipping'));
});

test('a failing rerank keeps the original order, untruncated; a working one keeps rerank-top-k', async () => {
  llm.failRerank({ status: 503, message: 'busy' });
  try {
    const kept = await withKnowledge(run('cats', { knowledgeBaseIds: ['pets', 'food'], rerankModel: 'rerank', rerankTopK: 1 }), deps());
    assert.equal((String(kept[1].content).match(/^\[\d\] /gm) ?? []).length, 3);
    assert.ok(warnings.some((w) => w.msg === 'Rerank failed, using original order'));
  } finally {
    llm.failRerank(undefined);
  }
  const reranked = await withKnowledge(run('where do fish eat', { knowledgeBaseIds: ['pets', 'food'], rerankModel: 'rerank', rerankTopK: 1 }), deps());
  assert.match(String(reranked[1].content), /<context>\n\[1\] cats eat fish\n<\/context>/);
});

test('a user turn without text retrieves nothing; a failing embedding leaves the message unchanged', async () => {
  const before = llm.embeddingRequests.length;
  const image: LlmMessage['content'] = [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }];
  const imageRun = run(image, { knowledgeBaseIds: ['pets'], rerankModel: '', rerankTopK: 5 });
  assert.equal(await withKnowledge(imageRun, deps()), imageRun.messages);
  assert.equal(llm.embeddingRequests.length, before, 'no embedding request');

  llm.failEmbeddings({ status: 500, message: 'down' });
  try {
    const textRun = run('cats', { knowledgeBaseIds: ['pets'], rerankModel: '', rerankTopK: 5 });
    assert.deepEqual(await withKnowledge(textRun, deps()), textRun.messages);
    const warning = warnings.find((w) => w.msg.startsWith('knowledge retrieval failed'));
    assert.equal((warning?.obj as { code?: string }).code, 'embedding_failed');
  } finally {
    llm.failEmbeddings(undefined);
  }
});
