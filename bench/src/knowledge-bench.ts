// Retrieval latency of a knowledge base: `npm run bench:knowledge -- [chunks=100000] [dimensions=256] [queries=30]`.
// Fills a throwaway database with one knowledge base of `chunks` chunks of random `dimensions`-long
// embeddings, then times KnowledgeStore.search (top 5), the query a retrieval makes per knowledge base.
// Without pgvector this is the exact search: the first search reads the embeddings into memory (cold),
// later ones score every chunk in process (warm).
import { performance } from 'node:perf_hooks';
import { closeDatabase, createDatabase, KnowledgeStore } from '@conveyor/persistence';
import { createTempDatabase } from '@conveyor/persistence/testing';
import { unitVector } from '@conveyor/agent';
import { fmtMs, percentile } from './stats.js';

const [chunks = 100_000, dims = 256, queries = 30] = process.argv.slice(2).map(Number);

const temp = await createTempDatabase();
const db = createDatabase(temp.url, 2);
try {
  const store = new KnowledgeStore(db);
  await db.prisma.knowledgeBase.create({ data: { id: 'bench', name: 'bench', embeddingModelId: 'none' } });
  const doc = await store.addDocument('bench', 'bench.txt', 'text', Buffer.from('bench'));
  const fillStart = performance.now();
  // Filled in SQL, 10,000 rows a statement; the inner query refers to g so each row gets its own vector.
  for (let from = 1; from <= chunks; from += 10_000) {
    await db.pool.query(
      `INSERT INTO "KnowledgeChunk" ("documentId", "knowledgeBaseId", position, "text", embedding)
       SELECT $1, 'bench', g, 'chunk ' || g, (SELECT array_agg(random() - 0.5)::real[] FROM generate_series(1, $4) AS d WHERE g IS NOT NULL)
         FROM generate_series($2::int, $3::int) AS g`,
      [doc.id, from, Math.min(chunks, from + 9_999), dims],
    );
  }
  await db.pool.query('ANALYZE "KnowledgeChunk"');
  const fillMs = performance.now() - fillStart;
  const pgvector = await store.hasPgvector();
  const query = () => unitVector(Array.from({ length: dims }, () => Math.random() - 0.5));
  const coldStart = performance.now();
  await store.search('bench', query(), 5);
  const coldMs = performance.now() - coldStart;
  for (let i = 0; i < 2; i++) await store.search('bench', query(), 5);
  const times: number[] = [];
  for (let i = 0; i < queries; i++) {
    const q = query();
    const start = performance.now();
    const hits = await store.search('bench', q, 5);
    times.push(performance.now() - start);
    if (hits.length !== 5) throw new Error(`expected 5 hits, got ${hits.length}`);
  }
  const { rows } = await db.pool.query<{ size: string }>(`SELECT pg_size_pretty(pg_total_relation_size('"KnowledgeChunk"')) AS size`);
  console.log(`knowledge retrieval: ${chunks} chunks × ${dims} dimensions (${rows[0].size}), ${pgvector ? 'pgvector HNSW' : 'exact, in process (no pgvector)'}, filled in ${fmtMs(fillMs)}`);
  console.log(`first search (reads the embeddings): ${fmtMs(coldMs)}`);
  console.log(`search top 5 over ${queries} queries: p50 ${fmtMs(percentile(times, 50))}, p95 ${fmtMs(percentile(times, 95))}, max ${fmtMs(Math.max(...times))}`);
} finally {
  await closeDatabase(db);
  await temp.drop();
}
