// Knowledge bases whose embedding model speaks a native API: a document ingested into the real
// knowledge store (Postgres) through Ollama's /api/embed and Gemini's batchEmbedContents, each fake
// speaking that API's wire format, and retrieved through the same model; Anthropic, which has no
// embeddings API, fails the document with a reason a user can act on.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ingestDocument, OpenAIClientPool, withKnowledge, type ResolvedModel } from '@conveyor/agent';
import type { ModelProviderKind } from '@conveyor/contracts';
import { closeDatabase, createDatabase, KnowledgeStore, type Database } from '@conveyor/persistence';
import { createTempDatabase, type TempDatabase } from '@conveyor/persistence/testing';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini-server.js';
import { startFakeOllama, type FakeOllama } from '../fakes/ollama-server.js';

let temp: TempDatabase;
let db: Database;
let store: KnowledgeStore;
let ollama: FakeOllama;
let gemini: FakeGemini;
const warnings: Array<{ obj: object; msg: string }> = [];
const logger = { info: () => undefined, warn: (obj: object, msg: string) => void warnings.push({ obj, msg }), error: () => undefined };
const pool = new OpenAIClientPool();

const models: Record<string, () => ResolvedModel> = {
  'ollama-embed': () => ({ id: 'ollama-embed', provider: 'ollama', baseUrl: ollama.url, apiKey: '', modelId: 'nomic-embed-text', abilities: ['embedding'], extraArgs: { truncate: true }, timeoutMs: 10_000 }),
  'gemini-embed': () => ({ id: 'gemini-embed', provider: 'gemini', baseUrl: gemini.url, apiKey: 'gemini-key', modelId: 'models/gemini-embedding-001', abilities: ['embedding'], extraArgs: { taskType: 'RETRIEVAL_DOCUMENT' }, timeoutMs: 10_000 }),
  'claude-embed': () => ({ id: 'claude-embed', provider: 'anthropic' satisfies ModelProviderKind, baseUrl: 'http://127.0.0.1:9', apiKey: 'x', modelId: 'claude', abilities: ['embedding'], extraArgs: {}, timeoutMs: 10_000 }),
};
const model = async (id: string) => models[id]?.() ?? null;
const ingestDeps = () => ({ store, model, pool, logger, embeddingAttempts: 1, retryBaseMs: 1 });

async function ingest(kb: string, text: string) {
  const doc = await store.addDocument(kb, `${kb}.txt`, 'text', Buffer.from(text));
  const outcome = await ingestDocument({ documentId: doc.id, revision: doc.revision }, ingestDeps());
  const row = await db.prisma.knowledgeDocument.findUniqueOrThrow({ where: { id: doc.id } });
  return { outcome, row };
}

before(async () => {
  temp = await createTempDatabase();
  db = createDatabase(temp.url, 2);
  store = new KnowledgeStore(db);
  [ollama, gemini] = await Promise.all([startFakeOllama({ models: ['nomic-embed-text'] }), startFakeGemini({ apiKey: 'gemini-key' })]);
  // A chunk per paragraph: each chunk is one short sentence.
  await db.prisma.knowledgeBase.createMany({
    data: [
      { id: 'pets', name: 'pets', embeddingModelId: 'ollama-embed', topK: 1, chunkSize: 30, chunkOverlap: 0 },
      { id: 'food', name: 'food', embeddingModelId: 'gemini-embed', topK: 1, chunkSize: 20, chunkOverlap: 0 },
      { id: 'none', name: 'none', embeddingModelId: 'claude-embed', topK: 1 },
    ],
  });
});

after(async () => {
  await Promise.all([ollama?.close(), gemini?.close()]);
  if (db) await closeDatabase(db);
  await temp?.drop();
});

test('Ollama: a document is embedded through /api/embed, stored, and found with the same model', async () => {
  const { outcome, row } = await ingest('pets', 'cats sleep all day\n\ndogs need a walk\n\nfish need clean water');
  assert.equal(outcome, 'done', row.error ?? '');
  assert.equal(row.status, 'done');
  assert.equal(await db.prisma.knowledgeChunk.count({ where: { knowledgeBaseId: 'pets' } }), 3);
  const [first] = ollama.embeddingRequests;
  assert.equal(first.model, 'nomic-embed-text');
  assert.ok(Array.isArray(first.input) && first.input.length === 3, 'every chunk in one request');
  assert.equal(first.truncate, true, "the model's extra argument goes with the request");
  assert.equal(ollama.requests.length, 0, 'no chat request');

  const before = ollama.embeddingRequests.length;
  const messages = await withKnowledge({ queryId: '00000000-0000-4000-8000-000000000001', messages: [{ role: 'user', content: 'where do dogs walk' }], knowledge: { knowledgeBaseIds: ['pets'], rerankModel: '', rerankTopK: 5 } }, { source: store, model, pool, logger });
  assert.match(String(messages[0].content), /<context>\n\[1\] dogs need a walk\n<\/context>/);
  assert.deepEqual(ollama.embeddingRequests.slice(before).map((r) => r.input), [['where do dogs walk']]);
});

test('Gemini: batchEmbedContents with the key, one request per text naming the model, and retrieval across both knowledge bases', async () => {
  const { outcome, row } = await ingest('food', 'cats eat fish\n\nbread needs an oven');
  assert.equal(outcome, 'done', row.error ?? '');
  const [first] = gemini.embeddingRequests;
  const requests = first.requests as Array<{ model: string; content: { parts: Array<{ text: string }> }; taskType?: string }>;
  assert.deepEqual(requests.map((r) => r.model), ['models/gemini-embedding-001', 'models/gemini-embedding-001']);
  assert.deepEqual(requests.map((r) => r.content.parts[0].text), ['cats eat fish', 'bread needs an oven']);
  assert.equal(requests[0].taskType, 'RETRIEVAL_DOCUMENT');

  const messages = await withKnowledge({ queryId: '00000000-0000-4000-8000-000000000002', messages: [{ role: 'user', content: 'what do cats eat' }], knowledge: { knowledgeBaseIds: ['pets', 'food'], rerankModel: '', rerankTopK: 5 } }, { source: store, model, pool, logger });
  const context = /<context>\n([\s\S]*)\n<\/context>/.exec(String(messages[0].content))?.[1];
  assert.deepEqual(context?.split('\n\n'), ['[1] cats sleep all day', '[2] cats eat fish']);
});

test('an Anthropic embedding model: the document fails and says why; a wrong Ollama model fails with its 404', async () => {
  const claude = await ingest('none', 'anything at all');
  assert.equal(claude.outcome, 'failed');
  assert.match(claude.row.error ?? '', /the anthropic API has no embeddings/);

  models['ollama-embed'] = ((base) => () => ({ ...base(), modelId: 'not-pulled' }))(models['ollama-embed']);
  const { outcome, row } = await ingest('pets', 'a second document about birds');
  assert.equal(outcome, 'failed');
  assert.match(row.error ?? '', /404 model "not-pulled" not found/);
});
