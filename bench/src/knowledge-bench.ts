// Knowledge retrieval, quality and speed: `npm run bench:knowledge -- [chunks=100000] [queries=50] [dimensions=256]`.
//
// Quality: the bilingual question set in bench/knowledge/corpus.json (public-domain passages in
// Chinese and English, questions written as users ask them, each naming the passages that answer it)
// goes into one knowledge base through KnowledgeStore (so chunks get their search terms as ingestion
// gives them), and every question is asked in each retrieval mode: recall@5 (the share of a question's
// answering passages among the top 5) and MRR (1 / rank of the first answering passage, 0 past 10).
// Embeddings come from an OpenAI-compatible endpoint when KNOWLEDGE_BENCH_EMBEDDINGS_URL is set
// (with _MODEL and _KEY), else from a hashed bag of words and character n-grams computed here: a
// lexical stand-in, not a neural model, so its vector figures say little about a real embedding model's.
//
// Speed: a second knowledge base of `chunks` synthetic chunks (Zipf-distributed words and CJK
// characters, random unit embeddings) and the query time of each mode, top 5, warm.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { closeDatabase, createDatabase, KnowledgeStore, RETRIEVAL_MODES, tsvectorLiteral, type RetrievalMode } from '@conveyor/persistence';
import { createTempDatabase } from '@conveyor/persistence/testing';
import { unitVector } from '@conveyor/agent';
import { fmtMs, percentile } from './stats.js';

const [chunks = 100_000, queries = 50, dims = 256] = process.argv.slice(2).map(Number);

interface Corpus {
  passages: Array<{ id: string; lang: string; text: string }>;
  questions: Array<{ lang: string; question: string; answers: string[] }>;
}
const corpus = JSON.parse(readFileSync(new URL('../knowledge/corpus.json', import.meta.url), 'utf8')) as Corpus;

const HASHED_DIMS = 512;
/** Words (lowercased) and their character 3-grams, CJK characters and bigrams, hashed into 512 signed buckets. */
function hashedEmbedding(text: string): Float32Array {
  const v = new Array<number>(HASHED_DIMS).fill(0);
  const add = (feature: string, weight: number) => {
    const h = createHash('sha1').update(feature).digest();
    v[h.readUInt32BE(0) % HASHED_DIMS] += (h[4] & 1 ? 1 : -1) * weight;
  };
  for (const [token] of text.normalize('NFKC').toLowerCase().matchAll(/\p{Script=Han}+|[\p{L}\p{N}]+/gu)) {
    const chars = Array.from(token);
    if (/\p{Script=Han}/u.test(token)) {
      chars.forEach((c, i) => {
        add(`u:${c}`, 0.5);
        if (i + 1 < chars.length) add(`b:${c}${chars[i + 1]}`, 1);
      });
    } else {
      add(`w:${token}`, 1);
      const padded = `^${token}$`;
      for (let i = 0; i + 3 <= padded.length; i++) add(`g:${padded.slice(i, i + 3)}`, 0.3);
    }
  }
  return unitVector(v.every((x) => x === 0) ? [1, ...v.slice(1)] : v);
}

const endpoint = process.env.KNOWLEDGE_BENCH_EMBEDDINGS_URL;
async function embed(texts: string[]): Promise<Float32Array[]> {
  if (!endpoint) return texts.map(hashedEmbedding);
  const out: Float32Array[] = [];
  for (let at = 0; at < texts.length; at += 32) {
    const res = await fetch(`${endpoint.replace(/\/$/, '')}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(process.env.KNOWLEDGE_BENCH_EMBEDDINGS_KEY ? { authorization: `Bearer ${process.env.KNOWLEDGE_BENCH_EMBEDDINGS_KEY}` } : {}) },
      body: JSON.stringify({ model: process.env.KNOWLEDGE_BENCH_EMBEDDINGS_MODEL, input: texts.slice(at, at + 32) }),
    });
    if (!res.ok) throw new Error(`embeddings: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { data: Array<{ index: number; embedding: number[] }> };
    for (const d of [...body.data].sort((a, b) => a.index - b.index)) out.push(unitVector(d.embedding));
  }
  return out;
}

const temp = await createTempDatabase();
const db = createDatabase(temp.url, 4);
try {
  const store = new KnowledgeStore(db);

  // ---------------------------------------------------------------- quality
  await db.prisma.knowledgeBase.create({ data: { id: 'eval', name: 'eval', embeddingModelId: 'bench' } });
  const evalDoc = await store.addDocument('eval', 'corpus.json', 'text', Buffer.from('corpus'));
  const passageVectors = await embed(corpus.passages.map((p) => p.text));
  await store.complete({ id: evalDoc.id, knowledgeBaseId: 'eval', revision: evalDoc.revision }, corpus.passages.map((p, i) => ({ text: p.text, embedding: passageVectors[i] })));
  const { rows: positions } = await db.pool.query<{ id: string; position: number }>(`SELECT id::text AS id, position FROM "KnowledgeChunk" WHERE "knowledgeBaseId" = 'eval'`);
  const passageOfChunk = new Map(positions.map((r) => [r.id, corpus.passages[r.position].id]));
  const questionVectors = await embed(corpus.questions.map((q) => q.question));
  const langs = [...new Set(corpus.questions.map((q) => q.lang))].sort();
  console.log(`knowledge retrieval quality: ${corpus.passages.length} passages, ${corpus.questions.length} questions (${langs.map((l) => `${corpus.questions.filter((q) => q.lang === l).length} ${l}`).join(', ')}); embeddings: ${endpoint ? `${process.env.KNOWLEDGE_BENCH_EMBEDDINGS_MODEL} at ${endpoint}` : `hashed words and n-grams (${HASHED_DIMS} dimensions, lexical, not a neural model)`}`);
  console.log('| mode | language | recall@5 | MRR@10 |');
  console.log('|---|---|---|---|');
  for (const mode of RETRIEVAL_MODES) {
    const scores: Array<{ lang: string; recall: number; rr: number }> = [];
    for (const [i, q] of corpus.questions.entries()) {
      const hits = await store.search('eval', { text: q.question, embedding: questionVectors[i] }, 10, mode);
      const ranked = hits.map((h) => passageOfChunk.get(h.id));
      const found = q.answers.filter((a) => ranked.slice(0, 5).includes(a)).length;
      const first = ranked.findIndex((p) => p !== undefined && q.answers.includes(p));
      scores.push({ lang: q.lang, recall: found / q.answers.length, rr: first < 0 ? 0 : 1 / (first + 1) });
    }
    for (const lang of [...langs, 'all']) {
      const of = scores.filter((s) => lang === 'all' || s.lang === lang);
      const mean = (pick: (s: (typeof scores)[number]) => number) => (of.reduce((sum, s) => sum + pick(s), 0) / of.length).toFixed(3);
      console.log(`| ${mode} | ${lang} | ${mean((s) => s.recall)} | ${mean((s) => s.rr)} |`);
    }
  }

  // ---------------------------------------------------------------- speed
  // Words drawn by Zipf's law over a vocabulary, as real text's are: a few terms are in most chunks.
  const latin = Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}x`);
  const han = Array.from({ length: 3_000 }, (_, i) => String.fromCodePoint(0x4e00 + i * 7));
  const harmonic = (n: number) => { const c = new Float64Array(n); let sum = 0; for (let i = 0; i < n; i++) c[i] = sum += 1 / (i + 1); return c.map((x) => x / sum); };
  const latinCdf = harmonic(latin.length);
  const hanCdf = harmonic(han.length);
  const draw = (words: string[], cdf: Float64Array) => {
    const r = Math.random();
    let lo = 0;
    for (let hi = cdf.length - 1; lo < hi; ) { const mid = (lo + hi) >> 1; if (cdf[mid] < r) lo = mid + 1; else hi = mid; }
    return words[lo];
  };
  const sentence = (n: number) => Array.from({ length: n }, () => (Math.random() < 0.5 ? draw(latin, latinCdf) : Array.from({ length: 4 }, () => draw(han, hanCdf)).join(''))).join(' ');

  await db.prisma.knowledgeBase.create({ data: { id: 'bench', name: 'bench', embeddingModelId: 'none' } });
  const doc = await store.addDocument('bench', 'bench.txt', 'text', Buffer.from('bench'));
  const fillStart = performance.now();
  for (let from = 0; from < chunks; from += 5_000) {
    const part = Array.from({ length: Math.min(5_000, chunks - from) }, (_, i) => {
      const text = sentence(40);
      return { position: from + i, text, terms: tsvectorLiteral(text) };
    });
    // The embedding is made in SQL; the inner query refers to p.position so each row gets its own vector.
    await db.pool.query(
      `INSERT INTO "KnowledgeChunk" ("documentId", "knowledgeBaseId", position, "text", embedding, terms)
       SELECT $1, 'bench', p.position, p.text,
              (SELECT array_agg(random() - 0.5)::real[] FROM generate_series(1, $3) AS d WHERE p.position IS NOT NULL), CAST(p.terms AS tsvector)
         FROM jsonb_to_recordset($2::jsonb) AS p(position int, text text, terms text)`,
      [doc.id, JSON.stringify(part), dims],
    );
  }
  await db.pool.query('ANALYZE "KnowledgeChunk"');
  const fillMs = performance.now() - fillStart;
  const pgvector = await store.hasPgvector();
  const { rows } = await db.pool.query<{ size: string }>(`SELECT pg_size_pretty(pg_total_relation_size('"KnowledgeChunk"')) AS size`);
  console.log(`\nknowledge retrieval speed: ${chunks} chunks × ${dims} dimensions, 40 words each (${rows[0].size} with indexes), vector search ${pgvector ? 'by pgvector HNSW' : 'exact, in process (no pgvector)'}, filled in ${fmtMs(fillMs)}`);
  const question = () => ({ text: sentence(3 + Math.floor(Math.random() * 4)), embedding: unitVector(Array.from({ length: dims }, () => Math.random() - 0.5)) });
  console.log('| mode | first search | p50 | p95 | max |');
  console.log('|---|---|---|---|---|');
  for (const mode of RETRIEVAL_MODES satisfies readonly RetrievalMode[]) {
    const coldStart = performance.now();
    await store.search('bench', question(), 5, mode);
    const coldMs = performance.now() - coldStart;
    for (let i = 0; i < 3; i++) await store.search('bench', question(), 5, mode);
    const times: number[] = [];
    for (let i = 0; i < queries; i++) {
      const q = question();
      const start = performance.now();
      await store.search('bench', q, 5, mode);
      times.push(performance.now() - start);
    }
    console.log(`| ${mode} | ${fmtMs(coldMs)} | ${fmtMs(percentile(times, 50))} | ${fmtMs(percentile(times, 95))} | ${fmtMs(Math.max(...times))} |`);
  }
} finally {
  await closeDatabase(db);
  await temp.drop();
}
