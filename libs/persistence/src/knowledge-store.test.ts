import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTempDatabase } from './testing/index.js';
import { KnowledgeDocumentError, KnowledgeStore, documentTypeOf, enablePgvector } from './knowledge-store.js';

const database = useTempDatabase();

const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

async function knowledgeBase(id: string) {
  await database().prisma.knowledgeBase.create({ data: { id, name: id, embeddingModelId: 'embed' } });
}

test('a document added twice with the same bytes is stored once; new bytes raise its revision and put it back to pending', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-add');
  const first = await store.addDocument('kb-add', 'a.md', 'markdown', Buffer.from('# one'));
  assert.equal(first.outcome, 'created');
  assert.equal(first.revision, 1);
  const again = await store.addDocument('kb-add', 'a.md', 'markdown', Buffer.from('# one'));
  assert.deepEqual(again, { ...first, outcome: 'unchanged' });
  const doc = await store.claim(first.id, 1);
  assert.ok(doc);
  assert.equal(await store.complete(doc, [{ text: 'one', embedding: unit([1, 0]) }]), true);
  const replaced = await store.addDocument('kb-add', 'a.md', 'markdown', Buffer.from('# two'));
  assert.deepEqual([replaced.id, replaced.revision, replaced.outcome], [first.id, 2, 'replaced']);
  const state = await store.document(first.id);
  assert.deepEqual([state?.status, state?.progress], ['pending', 0]);
  assert.equal(await database().prisma.knowledgeChunk.count({ where: { documentId: first.id } }), 0, 'the old chunks are gone');
  assert.equal(await store.claim(first.id, 1), null, 'a job for the old revision is dropped');
});

test('adding to an unknown knowledge base or past the size bound fails with a code', async () => {
  const store = new KnowledgeStore(database());
  await assert.rejects(store.addDocument('nope', 'a.txt', 'text', Buffer.from('x')), (err: unknown) => err instanceof KnowledgeDocumentError && err.code === 'unknown_knowledge_base');
  await knowledgeBase('kb-big');
  await assert.rejects(store.addDocument('kb-big', 'a.txt', 'text', Buffer.alloc(20 * 1_048_576 + 1)), (err: unknown) => err instanceof KnowledgeDocumentError && err.code === 'document_too_large');
});

test('exact search returns the nearest chunks of that knowledge base only, best first', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-s1');
  await knowledgeBase('kb-s2');
  const d1 = await store.addDocument('kb-s1', 'a.txt', 'text', Buffer.from('a'));
  const d2 = await store.addDocument('kb-s2', 'b.txt', 'text', Buffer.from('b'));
  await store.complete({ id: d1.id, knowledgeBaseId: 'kb-s1', revision: 1 }, [
    { text: 'east', embedding: unit([1, 0, 0]) },
    { text: 'north-east', embedding: unit([1, 1, 0]) },
    { text: 'north', embedding: unit([0, 1, 0]) },
    { text: 'up', embedding: unit([0, 0, 1]) },
  ]);
  await store.complete({ id: d2.id, knowledgeBaseId: 'kb-s2', revision: 1 }, [{ text: 'other east', embedding: unit([1, 0, 0]) }]);
  const hits = await store.searchVector('kb-s1', unit([1, 0.2, 0]), 2);
  assert.deepEqual(hits.map((h) => h.text), ['east', 'north-east']);
  assert.ok(hits[0].score > hits[1].score);
  assert.ok(Math.abs(hits[0].score - unit([1, 0.2, 0])[0]) < 1e-5, 'the score is the cosine similarity');
  assert.equal((await store.document(d1.id))?.status, 'done');
});

test('a failed document keeps its reason; a claimed one shows progress', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-f');
  const d = await store.addDocument('kb-f', 'a.txt', 'text', Buffer.from('a'));
  assert.ok(await store.claim(d.id, d.revision));
  await store.setProgress(d.id, d.revision, 40.7);
  assert.deepEqual(await store.document(d.id), { id: d.id, name: 'a.txt', status: 'processing', error: null, progress: 40, revision: 1 });
  await store.fail(d.id, d.revision, 'embedding failed: 500');
  const state = await store.document(d.id);
  assert.deepEqual([state?.status, state?.error], ['failed', 'embedding failed: 500']);
  assert.equal(await store.claim(d.id, d.revision), null, 'a failed document is not taken again by a repeated job');
  assert.deepEqual((await store.pending()).filter((p) => p.id === d.id), []);
});

test('document types come from the file name', () => {
  assert.deepEqual(['a.md', 'b.TXT', 'c.pdf', 'd.docx', 'e.exe', 'noext', 'f.HTM', 'g.xlsx', 'h.epub', 'i.csv'].map(documentTypeOf), ['markdown', 'text', 'pdf', 'docx', undefined, undefined, 'html', 'xlsx', 'epub', 'text']);
});

test('in-process search sees chunks added and removed since its last read, and agrees with the SQL scan', async () => {
  const store = new KnowledgeStore(database());
  const inSql = new KnowledgeStore(database(), { matrixBudgetBytes: 0 });
  await knowledgeBase('kb-m');
  const a = await store.addDocument('kb-m', 'a.txt', 'text', Buffer.from('a'));
  await store.complete({ id: a.id, knowledgeBaseId: 'kb-m', revision: 1 }, [
    { text: 'x axis', embedding: unit([1, 0, 0]) },
    { text: 'y axis', embedding: unit([0, 1, 0]) },
  ]);
  const q = unit([0.2, 0.1, 1]);
  assert.deepEqual((await store.searchVector('kb-m', q, 1)).map((h) => h.text), ['x axis']);
  const b = await store.addDocument('kb-m', 'b.txt', 'text', Buffer.from('b'));
  await store.complete({ id: b.id, knowledgeBaseId: 'kb-m', revision: 1 }, [{ text: 'z axis', embedding: unit([0, 0, 1]) }]);
  const after = await store.searchVector('kb-m', q, 3);
  assert.deepEqual(after.map((h) => h.text), ['z axis', 'x axis', 'y axis'], 'the new chunk is found');
  const sql = await inSql.searchVector('kb-m', q, 3);
  assert.deepEqual(sql.map((h) => h.text), after.map((h) => h.text));
  for (const [i, hit] of sql.entries()) assert.ok(Math.abs(hit.score - after[i].score) < 1e-5);
  await store.addDocument('kb-m', 'b.txt', 'text', Buffer.from('b changed'));
  assert.deepEqual((await store.searchVector('kb-m', q, 3)).map((h) => h.text), ['x axis', 'y axis'], 'replaced content leaves the search');
});

test('pgvector is enabled only where the server offers it, and search says which path it takes', async () => {
  const { rows } = await database().pool.query<{ found: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS found");
  const outcome = await enablePgvector(database().pool);
  assert.equal(outcome, rows[0].found ? 'enabled' : 'unavailable');
  assert.equal(await new KnowledgeStore(database()).hasPgvector(), outcome === 'enabled');
});

test('one document at a time: another upload waits while one is pending or ingested; re-index raises the revision and clears the chunks; delete removes it', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-serial');
  const first = await store.addDocument('kb-serial', 'a.txt', 'text', Buffer.from('one'), { oneAtATime: true });
  const busy = (err: unknown) => err instanceof KnowledgeDocumentError && err.code === 'knowledge_base_busy' && /a\.txt is waiting/.test(err.message);
  await assert.rejects(store.addDocument('kb-serial', 'b.txt', 'text', Buffer.from('two'), { oneAtATime: true }), busy);
  const replaced = await store.addDocument('kb-serial', 'a.txt', 'text', Buffer.from('one, again'), { oneAtATime: true });
  assert.equal(replaced.outcome, 'replaced', 'the waiting document itself may be replaced');
  const doc = await store.claim(first.id, replaced.revision);
  assert.ok(doc);
  await assert.rejects(store.addDocument('kb-serial', 'b.txt', 'text', Buffer.from('two'), { oneAtATime: true }), (err: unknown) => err instanceof KnowledgeDocumentError && /being ingested/.test(err.message));
  assert.equal(await store.complete(doc, [{ text: 'one', embedding: unit([1, 0]) }]), true);
  assert.equal((await store.addDocument('kb-serial', 'b.txt', 'text', Buffer.from('two'), { oneAtATime: true })).outcome, 'created', 'once done, the next one is taken');
  const second = await database().prisma.knowledgeDocument.findFirstOrThrow({ where: { knowledgeBaseId: 'kb-serial', name: 'b.txt' } });
  await store.fail(second.id, second.revision, 'embedding failed');

  const again = await store.reindexDocument('kb-serial', first.id);
  assert.equal(again.revision, replaced.revision + 1);
  assert.deepEqual([(await store.document(first.id))?.status, await database().prisma.knowledgeChunk.count({ where: { documentId: first.id } })], ['pending', 0]);
  await assert.rejects(store.reindexDocument('kb-serial', second.id), busy, 'a re-index waits its turn too');
  await assert.rejects(store.reindexDocument('kb-serial', 'nope'), (err: unknown) => err instanceof KnowledgeDocumentError && err.code === 'unknown_document');
  assert.equal(await store.deleteDocument('kb-serial', first.id), true);
  assert.equal(await store.deleteDocument('kb-serial', first.id), false);
  assert.equal(await store.deleteDocument('other-kb', second.id), false, 'only within its own knowledge base');
});

test('full-text search finds Chinese chunks by bigram and English ones by stem, within the knowledge base, most matching first', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-ft');
  await knowledgeBase('kb-ft-other');
  const d = await store.addDocument('kb-ft', 'a.txt', 'text', Buffer.from('a'));
  const o = await store.addDocument('kb-ft-other', 'a.txt', 'text', Buffer.from('a'));
  const flat = unit([1, 0]);
  await store.complete({ id: d.id, knowledgeBaseId: 'kb-ft', revision: 1 }, [
    { text: '退款会在五个工作日内退回原支付账户。', embedding: flat },
    { text: '门店营业时间为每天上午九点到晚上九点。', embedding: flat },
    { text: 'Refunds are returned to the original card within five business days.', embedding: flat },
    { text: 'The store opens at nine and closes at nine.', embedding: flat },
  ]);
  await store.complete({ id: o.id, knowledgeBaseId: 'kb-ft-other', revision: 1 }, [{ text: '退款政策', embedding: flat }]);
  assert.deepEqual((await store.searchTerms('kb-ft', '退款要多久？', 5)).map((h) => h.text), ['退款会在五个工作日内退回原支付账户。']);
  assert.deepEqual((await store.searchTerms('kb-ft', '营业时间', 5)).map((h) => h.text), ['门店营业时间为每天上午九点到晚上九点。']);
  assert.deepEqual((await store.searchTerms('kb-ft', 'how long does a refund take', 5)).map((h) => h.text), ['Refunds are returned to the original card within five business days.']);
  const both = await store.searchTerms('kb-ft', 'when does the store open and close?', 5);
  assert.equal(both[0]?.text, 'The store opens at nine and closes at nine.');
  assert.deepEqual(await store.searchTerms('kb-ft', 'the of and？', 5), [], 'a question of stopwords and punctuation finds nothing');
  assert.deepEqual(await store.search('kb-ft', { text: '退款' }, 5, 'hybrid').then((h) => h.length), 1, 'hybrid without an embedding is full-text alone');
  await assert.rejects(store.search('kb-ft', { text: '退款' }, 5, 'vector'), /embedding/);
});

test('hybrid search fuses the vector and term rankings: a chunk high in both comes first', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-h');
  const d = await store.addDocument('kb-h', 'a.txt', 'text', Buffer.from('a'));
  await store.complete({ id: d.id, knowledgeBaseId: 'kb-h', revision: 1 }, [
    { text: 'alpha only by vector', embedding: unit([1, 0, 0]) },
    { text: 'gamma words about many invoices', embedding: unit([0, 0, 1]) },
    { text: 'beta invoices', embedding: unit([0.9, 0.3, 0]) },
  ]);
  const query = { text: 'invoices', embedding: unit([1, 0.1, 0]) };
  assert.deepEqual((await store.search('kb-h', query, 3, 'vector')).map((h) => h.text)[0], 'alpha only by vector');
  assert.deepEqual((await store.search('kb-h', query, 3, 'fulltext')).map((h) => h.text).sort(), ['beta invoices', 'gamma words about many invoices']);
  const hybrid = await store.search('kb-h', query, 3, 'hybrid');
  assert.equal(hybrid[0].text, 'beta invoices', 'second by vector and first or second by terms beats first by one list alone');
  assert.equal(hybrid.length, 3);
  assert.ok(hybrid[0].score > hybrid[1].score && hybrid[1].score >= hybrid[2].score);
});

test('chunks written before full-text search get their terms from the sweep; a rechunk re-queues every document under the new settings', async () => {
  const store = new KnowledgeStore(database());
  await knowledgeBase('kb-old');
  const d = await store.addDocument('kb-old', 'a.txt', 'text', Buffer.from('a'));
  await store.complete({ id: d.id, knowledgeBaseId: 'kb-old', revision: 1 }, [{ text: '旧的知识库条目 legacy entry', embedding: unit([1, 0]) }]);
  await database().pool.query(`UPDATE "KnowledgeChunk" SET terms = NULL WHERE "knowledgeBaseId" = 'kb-old'`);
  assert.deepEqual(await store.searchTerms('kb-old', '知识库', 5), []);
  while ((await store.fillMissingTerms(1)) > 0);
  assert.deepEqual((await store.searchTerms('kb-old', '知识库', 5)).map((h) => h.text), ['旧的知识库条目 legacy entry']);
  assert.deepEqual((await store.searchTerms('kb-old', 'legacies', 5)).length, 1, 'a stem matches another form of the word');

  const queued = await store.rechunk('kb-old', { chunkSize: 256, embeddingModelId: 'embed-2' });
  assert.deepEqual(queued, [{ id: d.id, revision: 2 }]);
  assert.deepEqual(await store.knowledgeBase('kb-old').then((kb) => [kb?.chunkSize, kb?.chunkOverlap, kb?.embeddingModelId]), [256, 50, 'embed-2']);
  assert.equal(await database().prisma.knowledgeChunk.count({ where: { knowledgeBaseId: 'kb-old' } }), 0, 'the old chunks are gone');
  assert.equal((await store.document(d.id))?.status, 'pending');
  assert.equal(await store.claim(d.id, 1), null, 'a job for the old revision is dropped');
  await assert.rejects(store.rechunk('nope', { chunkSize: 10 }), (err: unknown) => err instanceof KnowledgeDocumentError && err.code === 'unknown_knowledge_base');
});
