import { createHash } from 'node:crypto';
import type pg from 'pg';
import { LIMITS } from '@conveyor/contracts';
import type { Database } from './client.js';
import { tsqueryLiteral, tsvectorLiteral } from './knowledge-terms.js';

export type KnowledgeDocumentType = 'text' | 'markdown' | 'pdf' | 'docx' | 'html' | 'xlsx' | 'epub';

/** How a knowledge base finds chunks for a question: by embedding, by terms, or both fused by rank. */
export const RETRIEVAL_MODES = ['vector', 'fulltext', 'hybrid'] as const;
export type RetrievalMode = (typeof RETRIEVAL_MODES)[number];
export type KnowledgeDocumentStatus = 'pending' | 'processing' | 'done' | 'failed';

export interface KnowledgeBaseSettings {
  id: string;
  name: string;
  embeddingModelId: string;
  topK: number;
  chunkSize: number;
  chunkOverlap: number;
  rerankModelId: string | null;
  retrievalMode: RetrievalMode;
  /** The plugin retriever backing it instead of documents; null for a knowledge base of documents. */
  retriever: { plugin: string; name: string } | null;
}

/** What a search looks for: the question's text, and its embedding when the mode uses vectors. */
export interface ChunkQuery {
  text: string;
  embedding?: ArrayLike<number>;
}

export interface ChunkHit {
  /** The chunk's id (a bigint, as text). */
  id: string;
  text: string;
  /**
   * Vector search: cosine similarity to the query (embeddings are unit length); full-text: Postgres'
   * `ts_rank`; hybrid: the reciprocal rank fusion score.
   */
  score: number;
  documentId: string;
  position: number;
}

export interface DocumentToIngest {
  id: string;
  knowledgeBaseId: string;
  name: string;
  type: KnowledgeDocumentType;
  revision: number;
  content: Buffer;
}

/** What `addDocument` did: a new document, new content for an existing one, or nothing (same bytes). */
export type AddDocumentOutcome = 'created' | 'replaced' | 'unchanged';

/** A document could not be added (too large, unknown knowledge base); `code` says which. */
export class KnowledgeDocumentError extends Error {
  constructor(readonly code: 'document_too_large' | 'unknown_knowledge_base' | 'unknown_document' | 'knowledge_base_busy', message: string) {
    super(message);
    this.name = 'KnowledgeDocumentError';
  }
}

/** A document's type from its file name; undefined when Conveyor cannot read it. */
export function documentTypeOf(fileName: string): KnowledgeDocumentType | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(fileName)?.[1]?.toLowerCase();
  switch (ext) {
    case 'txt': case 'text': case 'log': case 'csv': case 'tsv': return 'text';
    case 'md': case 'markdown': return 'markdown';
    case 'pdf': return 'pdf';
    case 'docx': return 'docx';
    case 'html': case 'htm': case 'xhtml': return 'html';
    case 'xlsx': return 'xlsx';
    case 'epub': return 'epub';
    default: return undefined;
  }
}

/** A knowledge base's embeddings held in process for exact search, valid while its stamp is unchanged. */
interface EmbeddingMatrix {
  /** Chunk count and highest chunk id: any insert or delete changes it (ids are never reused). */
  stamp: string;
  dims: number;
  ids: Float64Array;
  /** Row-major, `dims` values per chunk, unit length. */
  values: Float32Array;
}

/** Decodes `array_send(real[])`: a header, then per element a length and a big-endian float4. */
export function decodeFloat4Array(buf: Buffer): Float32Array {
  const ndim = buf.readInt32BE(0);
  if (ndim === 0) return new Float32Array(0);
  if (ndim !== 1) throw new Error(`expected a one-dimensional array, got ${ndim} dimensions`);
  if (buf.readInt32BE(4) !== 0) throw new Error('embedding holds NULL elements');
  const n = buf.readInt32BE(12);
  const out = new Float32Array(n);
  let at = 20;
  for (let i = 0; i < n; i++, at += 8) out[i] = buf.readFloatBE(at + 4);
  return out;
}

/** pgvector's limit for an HNSW index on `vector`. */
const PGVECTOR_HNSW_MAX_DIMENSIONS = 2_000;

/** Rows loaded per statement while a knowledge base's embeddings are read into memory. */
const LOAD_PAGE_ROWS = 10_000;

/**
 * Installs pgvector in the database when the server offers it (setup runs this after the migrations),
 * so knowledge base search uses HNSW indexes; without it search stays exact. Never required.
 */
export async function enablePgvector(pool: Pick<pg.Pool, 'query'>): Promise<'enabled' | 'unavailable' | { failed: string }> {
  const { rows } = await pool.query<{ found: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS found");
  if (!rows[0]?.found) return 'unavailable';
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS vector');
    return 'enabled';
  } catch (err) {
    // E.g. a role that may not create extensions: search stays exact, setup goes on.
    return { failed: (err as Error).message };
  }
}

/**
 * One document of a knowledge base at a time through the admin API: refused while another one (not
 * `name`, which is being replaced) waits or is being ingested. The caller holds the knowledge base's
 * row lock, so two uploads cannot both pass.
 */
async function refuseWhileIngesting(client: pg.PoolClient, knowledgeBaseId: string, name: string): Promise<void> {
  const { rows } = await client.query<{ name: string; status: string }>(
    `SELECT name, status FROM "KnowledgeDocument" WHERE "knowledgeBaseId" = $1 AND status IN ('pending', 'processing') AND name <> $2 LIMIT 1`,
    [knowledgeBaseId, name],
  );
  if (rows[0]) throw new KnowledgeDocumentError('knowledge_base_busy', `${rows[0].name} is ${rows[0].status === 'pending' ? 'waiting to be ingested' : 'being ingested'}; a knowledge base ingests one document at a time`);
}

/**
 * Reciprocal rank fusion's constant (Cormack et al., and the default of Elasticsearch and OpenSearch):
 * a chunk's fused score is the sum over the lists holding it of 1 / (k + rank).
 */
const RRF_K = 60;
/** Candidates each list of a hybrid search contributes: a multiple of top-k, so fusion has room to reorder. */
const hybridCandidates = (topK: number) => Math.max(20, topK * 4);

/** Fuses ranked lists by reciprocal rank: chunks high in either list, or present in both, come first. */
export function fuseByRank(lists: ChunkHit[][], topK: number): ChunkHit[] {
  const fused = new Map<string, ChunkHit>();
  for (const list of lists) {
    list.forEach((hit, rank) => {
      const score = 1 / (RRF_K + rank + 1);
      const seen = fused.get(hit.id);
      if (seen) seen.score += score;
      else fused.set(hit.id, { ...hit, score });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score || Number(a.id) - Number(b.id)).slice(0, topK);
}

/** Chunks whose terms one sweep step computes (those written before full-text search existed). */
const TERMS_BACKFILL_ROWS = 500;

/** pgvector's text form of a vector: `[0.1,0.2,...]`. */
const vectorLiteral = (v: ArrayLike<number>) => `[${Array.from(v).join(',')}]`;

/**
 * Knowledge bases, their documents and chunks. Search is exact (every chunk of the knowledge base
 * scored in SQL, a dot product of unit vectors) unless the pgvector extension is installed: then an
 * HNSW index per knowledge base (an expression index over `embedding::vector(n)`, so the table is
 * the same with and without the extension) answers nearest-neighbour queries.
 */
export class KnowledgeStore {
  private readonly pool: pg.Pool;
  private pgvector: Promise<boolean> | undefined;
  /** Embedding matrices by knowledge base, oldest use first (a Map keeps insertion order). */
  private readonly matrices = new Map<string, EmbeddingMatrix>();
  private readonly loading = new Map<string, Promise<EmbeddingMatrix | null>>();
  private readonly matrixBudgetBytes: number;

  /**
   * `matrixBudgetBytes` bounds the embeddings held in process for exact search (default 256 MiB); a
   * knowledge base larger than it is scored in SQL instead, which is much slower.
   */
  constructor(db: Pick<Database, 'pool'>, options: { matrixBudgetBytes?: number } = {}) {
    this.pool = db.pool;
    this.matrixBudgetBytes = options.matrixBudgetBytes ?? 256 * 1_048_576;
  }

  /** Whether pgvector is installed in this database (asked once). */
  hasPgvector(): Promise<boolean> {
    this.pgvector ??= this.pool
      .query<{ found: boolean }>("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AS found")
      .then((r) => r.rows[0]?.found === true)
      .catch((err: unknown) => {
        this.pgvector = undefined;
        throw err;
      });
    return this.pgvector;
  }

  async knowledgeBase(id: string): Promise<KnowledgeBaseSettings | null> {
    const { rows } = await this.pool.query<Omit<KnowledgeBaseSettings, 'retriever'> & { retrieverPlugin: string | null; retriever: string | null }>(
      'SELECT id, name, "embeddingModelId", "topK", "chunkSize", "chunkOverlap", "rerankModelId", "retrievalMode", "retrieverPlugin", retriever FROM "KnowledgeBase" WHERE id = $1',
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const { retrieverPlugin, retriever, ...settings } = row;
    return {
      ...settings,
      retrievalMode: RETRIEVAL_MODES.find((m) => m === row.retrievalMode) ?? 'hybrid',
      retriever: retrieverPlugin && retriever ? { plugin: retrieverPlugin, name: retriever } : null,
    };
  }

  /**
   * The knowledge base's best `topK` chunks for the query, best first: by embedding (`vector`, which
   * needs `query.embedding`), by terms (`fulltext`), or both fused by reciprocal rank (`hybrid`; without
   * an embedding it is full-text alone).
   */
  async search(knowledgeBaseId: string, query: ChunkQuery, topK: number, mode: RetrievalMode): Promise<ChunkHit[]> {
    if (mode === 'fulltext' || (mode === 'hybrid' && !query.embedding)) return this.searchTerms(knowledgeBaseId, query.text, topK);
    if (!query.embedding) throw new Error('a vector search needs the question\'s embedding');
    if (mode === 'vector') return this.searchVector(knowledgeBaseId, query.embedding, topK);
    const candidates = hybridCandidates(topK);
    const [byVector, byTerms] = await Promise.all([
      this.searchVector(knowledgeBaseId, query.embedding, candidates),
      this.searchTerms(knowledgeBaseId, query.text, candidates),
    ]);
    return fuseByRank([byVector, byTerms], topK);
  }

  /**
   * Full-text search: the chunks holding any of the question's terms, ranked by `ts_rank` normalised
   * by the chunk's length (so a long chunk does not win by size alone). The GIN index over the terms
   * finds the candidates.
   */
  async searchTerms(knowledgeBaseId: string, text: string, topK: number): Promise<ChunkHit[]> {
    const query = tsqueryLiteral(text);
    if (!query) return [];
    const { rows } = await this.pool.query<ChunkHit>(
      `SELECT id::text AS id, "text", "documentId", "position", ts_rank(terms, q, 1)::float8 AS score
         FROM "KnowledgeChunk", CAST($2 AS tsquery) AS q
        WHERE "knowledgeBaseId" = $1 AND terms @@ q
        ORDER BY score DESC, id LIMIT $3`,
      [knowledgeBaseId, query, topK],
    );
    return rows;
  }

  /**
   * Computes the search terms of up to `limit` chunks that have none (written before full-text search
   * existed); returns how many it did. The runner's sweep calls it until it returns 0.
   */
  async fillMissingTerms(limit = TERMS_BACKFILL_ROWS): Promise<number> {
    const { rows } = await this.pool.query<{ id: string; text: string }>('SELECT id::text AS id, "text" FROM "KnowledgeChunk" WHERE terms IS NULL ORDER BY id LIMIT $1', [limit]);
    if (rows.length === 0) return 0;
    await this.pool.query(
      `UPDATE "KnowledgeChunk" AS c SET terms = CAST(p.terms AS tsvector)
         FROM jsonb_to_recordset($1::jsonb) AS p(id bigint, terms text) WHERE c.id = p.id AND c.terms IS NULL`,
      [JSON.stringify(rows.map((r) => ({ id: r.id, terms: tsvectorLiteral(r.text) })))],
    );
    return rows.length;
  }

  /** The `topK` chunks of the knowledge base nearest to `embedding` (unit length), best first. */
  async searchVector(knowledgeBaseId: string, embedding: ArrayLike<number>, topK: number): Promise<ChunkHit[]> {
    if (await this.hasPgvector()) return this.searchIndexed(knowledgeBaseId, embedding, topK);
    const matrix = await this.matrix(knowledgeBaseId, embedding.length);
    if (matrix) return this.searchMatrix(matrix, embedding, topK);
    return this.searchInSql(knowledgeBaseId, embedding, topK);
  }

  /**
   * Exact search in process: the knowledge base's embeddings are read once (binary, paged) and kept
   * while its chunk count and highest id stay the same, so a search costs one index scan for the stamp
   * plus a dot product per chunk. Null when they would not fit the budget (or dimensions differ).
   */
  private async matrix(knowledgeBaseId: string, dims: number): Promise<EmbeddingMatrix | null> {
    const { rows } = await this.pool.query<{ n: string; top: string }>(
      'SELECT count(*) AS n, coalesce(max(id), 0) AS top FROM "KnowledgeChunk" WHERE "knowledgeBaseId" = $1',
      [knowledgeBaseId],
    );
    const count = Number(rows[0].n);
    const stamp = `${count}:${rows[0].top}`;
    const cached = this.matrices.get(knowledgeBaseId);
    if (cached?.stamp === stamp) {
      this.matrices.delete(knowledgeBaseId);
      this.matrices.set(knowledgeBaseId, cached);
      return cached.dims === dims ? cached : null;
    }
    if (count * dims * 4 > this.matrixBudgetBytes) return null;
    const key = `${knowledgeBaseId}\u0000${stamp}`;
    let load = this.loading.get(key);
    if (!load) {
      load = this.loadMatrix(knowledgeBaseId, stamp, count, dims).finally(() => this.loading.delete(key));
      this.loading.set(key, load);
    }
    return load;
  }

  private async loadMatrix(knowledgeBaseId: string, stamp: string, count: number, dims: number): Promise<EmbeddingMatrix | null> {
    const ids = new Float64Array(count);
    const values = new Float32Array(count * dims);
    let n = 0;
    for (let after = '0'; ; ) {
      const { rows } = await this.pool.query<{ id: string; e: Buffer }>(
        `SELECT id, array_send("embedding") AS e FROM "KnowledgeChunk"
          WHERE "knowledgeBaseId" = $1 AND id > $2 AND "embedding" IS NOT NULL ORDER BY id LIMIT ${LOAD_PAGE_ROWS}`,
        [knowledgeBaseId, after],
      );
      for (const row of rows) {
        const v = decodeFloat4Array(row.e);
        // Chunks added since the stamp was read, or of another embedding model: the stamp is stale, score in SQL.
        if (v.length !== dims || n >= count) return null;
        ids[n] = Number(row.id);
        values.set(v, n * dims);
        n++;
      }
      if (rows.length < LOAD_PAGE_ROWS) break;
      after = rows[rows.length - 1].id;
    }
    const matrix: EmbeddingMatrix = { stamp, dims, ids: ids.subarray(0, n), values: values.subarray(0, n * dims) };
    this.matrices.delete(knowledgeBaseId);
    this.matrices.set(knowledgeBaseId, matrix);
    let held = 0;
    for (const m of this.matrices.values()) held += m.values.byteLength;
    for (const [id, m] of this.matrices) {
      if (held <= this.matrixBudgetBytes || id === knowledgeBaseId) continue;
      this.matrices.delete(id);
      held -= m.values.byteLength;
    }
    return matrix;
  }

  private async searchMatrix(matrix: EmbeddingMatrix, embedding: ArrayLike<number>, topK: number): Promise<ChunkHit[]> {
    const { dims, values, ids } = matrix;
    const q = Float32Array.from(embedding);
    // The best topK so far, kept sorted best first (topK is small).
    const best: Array<{ row: number; score: number }> = [];
    for (let row = 0, base = 0; row < ids.length; row++, base += dims) {
      let score = 0;
      for (let i = 0; i < dims; i++) score += values[base + i] * q[i];
      if (best.length === topK && score <= best[best.length - 1].score) continue;
      let at = best.length;
      while (at > 0 && best[at - 1].score < score) at--;
      best.splice(at, 0, { row, score });
      if (best.length > topK) best.pop();
    }
    if (best.length === 0) return [];
    const { rows } = await this.pool.query<{ id: string; text: string; documentId: string; position: number }>(
      'SELECT id::text AS id, "text", "documentId", "position" FROM "KnowledgeChunk" WHERE id = ANY($1::bigint[])',
      [best.map((b) => String(ids[b.row]))],
    );
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    // A chunk deleted since the matrix was read is left out.
    return best.flatMap((b) => {
      const r = byId.get(ids[b.row]);
      return r ? [{ id: r.id, text: r.text, documentId: r.documentId, position: r.position, score: b.score }] : [];
    });
  }

  /** Exact search in SQL, for a knowledge base too large for the in-process budget. */
  private async searchInSql(knowledgeBaseId: string, embedding: ArrayLike<number>, topK: number): Promise<ChunkHit[]> {
    const { rows } = await this.pool.query<ChunkHit>(
      `SELECT id, "text", "documentId", "position", score FROM (
         SELECT id::text AS id, "text", "documentId", "position",
                (SELECT sum(a * b) FROM unnest("embedding", $2::real[]) AS t(a, b))::float8 AS score
           FROM "KnowledgeChunk" WHERE "knowledgeBaseId" = $1 AND "embedding" IS NOT NULL
       ) scored WHERE score IS NOT NULL ORDER BY score DESC, "documentId", "position" LIMIT $3`,
      [knowledgeBaseId, Array.from(embedding), topK],
    );
    return rows;
  }

  /** pgvector: `<#>` is the negative inner product, which the per-knowledge-base HNSW index serves. */
  private async searchIndexed(knowledgeBaseId: string, embedding: ArrayLike<number>, topK: number): Promise<ChunkHit[]> {
    const dims = embedding.length;
    // The knowledge base id is a literal, not a parameter, so the planner can match the partial index's predicate.
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<ChunkHit>(
        `SELECT id::text AS id, "text", "documentId", "position", -(("embedding"::vector(${dims})) <#> $1::vector(${dims}))::float8 AS score
           FROM "KnowledgeChunk" WHERE "knowledgeBaseId" = ${client.escapeLiteral(knowledgeBaseId)}
          ORDER BY ("embedding"::vector(${dims})) <#> $1::vector(${dims}) LIMIT $2`,
        [vectorLiteral(embedding), topK],
      );
      return rows;
    } finally {
      client.release();
    }
  }

  /**
   * With pgvector: the knowledge base's HNSW index for `dims`-dimensional embeddings, created once.
   * pgvector indexes at most 2,000 dimensions; past that its search scans the knowledge base.
   */
  async ensureVectorIndex(knowledgeBaseId: string, dims: number): Promise<boolean> {
    if (dims > PGVECTOR_HNSW_MAX_DIMENSIONS || !(await this.hasPgvector())) return false;
    const name = `KnowledgeChunk_hnsw_${createHash('sha256').update(knowledgeBaseId).digest('hex').slice(0, 16)}_${dims}`;
    const client = await this.pool.connect();
    try {
      await client.query(
        `CREATE INDEX IF NOT EXISTS "${name}" ON "KnowledgeChunk" USING hnsw ((("embedding"::vector(${dims}))) vector_ip_ops)
          WHERE "knowledgeBaseId" = ${client.escapeLiteral(knowledgeBaseId)}`,
      );
      return true;
    } finally {
      client.release();
    }
  }

  /**
   * Adds a document, or replaces the content of the one with the same name: it goes back to
   * `pending` under a new revision and its chunks are removed. The same bytes again change nothing.
   */
  async addDocument(knowledgeBaseId: string, name: string, type: KnowledgeDocumentType, content: Buffer, options: { oneAtATime?: boolean } = {}): Promise<{ id: string; revision: number; outcome: AddDocumentOutcome }> {
    if (content.byteLength > LIMITS.knowledgeDocumentBytes) {
      throw new KnowledgeDocumentError('document_too_large', `${name}: ${content.byteLength} bytes, more than the ${LIMITS.knowledgeDocumentBytes} a document may have`);
    }
    const hash = createHash('sha256').update(content).digest('hex');
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const kb = await client.query(`SELECT 1 FROM "KnowledgeBase" WHERE id = $1 ${options.oneAtATime ? 'FOR UPDATE' : 'FOR SHARE'}`, [knowledgeBaseId]);
      if (!kb.rowCount) throw new KnowledgeDocumentError('unknown_knowledge_base', `unknown knowledge base ${JSON.stringify(knowledgeBaseId)}`);
      if (options.oneAtATime) await refuseWhileIngesting(client, knowledgeBaseId, name);
      const existing = await client.query<{ id: string; revision: number; contentHash: string }>(
        'SELECT id, revision, "contentHash" FROM "KnowledgeDocument" WHERE "knowledgeBaseId" = $1 AND name = $2 FOR UPDATE',
        [knowledgeBaseId, name],
      );
      let result: { id: string; revision: number; outcome: AddDocumentOutcome };
      const row = existing.rows[0];
      if (!row) {
        const created = await client.query<{ id: string; revision: number }>(
          `INSERT INTO "KnowledgeDocument" (id, "knowledgeBaseId", name, type, content, "contentHash", "updatedAt")
           VALUES (gen_random_uuid()::text, $1, $2, $3, $4, $5, now()) RETURNING id, revision`,
          [knowledgeBaseId, name, type, content, hash],
        );
        result = { ...created.rows[0], outcome: 'created' };
      } else if (row.contentHash === hash) {
        result = { id: row.id, revision: row.revision, outcome: 'unchanged' };
      } else {
        await client.query('DELETE FROM "KnowledgeChunk" WHERE "documentId" = $1', [row.id]);
        const updated = await client.query<{ id: string; revision: number }>(
          `UPDATE "KnowledgeDocument" SET type = $2, content = $3, "contentHash" = $4, revision = revision + 1,
                  status = 'pending', error = NULL, progress = 0, "updatedAt" = now()
            WHERE id = $1 RETURNING id, revision`,
          [row.id, type, content, hash],
        );
        result = { ...updated.rows[0], outcome: 'replaced' };
      }
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Ingests the document again from its stored content (a new embedding model, a failure fixed): a new
   * revision, back to `pending`, its chunks removed. Refused while another document of the knowledge
   * base waits or is being ingested, as an upload with `oneAtATime` is.
   */
  async reindexDocument(knowledgeBaseId: string, documentId: string): Promise<{ id: string; revision: number }> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const kb = await client.query('SELECT 1 FROM "KnowledgeBase" WHERE id = $1 FOR UPDATE', [knowledgeBaseId]);
      if (!kb.rowCount) throw new KnowledgeDocumentError('unknown_knowledge_base', `unknown knowledge base ${JSON.stringify(knowledgeBaseId)}`);
      const doc = await client.query<{ name: string }>('SELECT name FROM "KnowledgeDocument" WHERE id = $1 AND "knowledgeBaseId" = $2 FOR UPDATE', [documentId, knowledgeBaseId]);
      if (!doc.rowCount) throw new KnowledgeDocumentError('unknown_document', `knowledge base ${JSON.stringify(knowledgeBaseId)} has no document ${JSON.stringify(documentId)}`);
      await refuseWhileIngesting(client, knowledgeBaseId, doc.rows[0].name);
      await client.query('DELETE FROM "KnowledgeChunk" WHERE "documentId" = $1', [documentId]);
      const { rows } = await client.query<{ id: string; revision: number }>(
        `UPDATE "KnowledgeDocument" SET revision = revision + 1, status = 'pending', error = NULL, progress = 0, "updatedAt" = now()
          WHERE id = $1 RETURNING id, revision`,
        [documentId],
      );
      await client.query('COMMIT');
      return rows[0];
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Changes how the knowledge base's chunks are made (embedding model, chunk size, overlap) and sends
   * every document back to `pending` under a new revision, its chunks removed, in one transaction: a
   * question never meets chunks of one model scored against another's embedding. Jobs in flight for
   * the old revisions are dropped when they finish. Returns the documents to announce.
   */
  async rechunk(knowledgeBaseId: string, settings: Partial<Pick<KnowledgeBaseSettings, 'embeddingModelId' | 'chunkSize' | 'chunkOverlap'>>): Promise<Array<{ id: string; revision: number }>> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const kb = await client.query('SELECT 1 FROM "KnowledgeBase" WHERE id = $1 FOR UPDATE', [knowledgeBaseId]);
      if (!kb.rowCount) throw new KnowledgeDocumentError('unknown_knowledge_base', `unknown knowledge base ${JSON.stringify(knowledgeBaseId)}`);
      await client.query(
        `UPDATE "KnowledgeBase" SET "embeddingModelId" = coalesce($2, "embeddingModelId"), "chunkSize" = coalesce($3, "chunkSize"),
                "chunkOverlap" = coalesce($4, "chunkOverlap"), "updatedAt" = now() WHERE id = $1`,
        [knowledgeBaseId, settings.embeddingModelId ?? null, settings.chunkSize ?? null, settings.chunkOverlap ?? null],
      );
      await client.query('DELETE FROM "KnowledgeChunk" WHERE "knowledgeBaseId" = $1', [knowledgeBaseId]);
      const { rows } = await client.query<{ id: string; revision: number }>(
        `UPDATE "KnowledgeDocument" SET revision = revision + 1, status = 'pending', error = NULL, progress = 0, "updatedAt" = now()
          WHERE "knowledgeBaseId" = $1 RETURNING id, revision`,
        [knowledgeBaseId],
      );
      await client.query('COMMIT');
      return rows;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** Removes a document and its chunks (a job still running for it finds it gone and stores nothing). */
  async deleteDocument(knowledgeBaseId: string, documentId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM "KnowledgeDocument" WHERE id = $1 AND "knowledgeBaseId" = $2', [documentId, knowledgeBaseId]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Takes the document for ingestion at `revision`: null when the job is stale (content replaced
   * since), the document is gone, or it is already done or failed (a job delivered twice).
   */
  async claim(documentId: string, revision: number): Promise<DocumentToIngest | null> {
    const { rows } = await this.pool.query<DocumentToIngest>(
      `UPDATE "KnowledgeDocument" SET status = 'processing', error = NULL, progress = 0, "updatedAt" = now()
        WHERE id = $1 AND revision = $2 AND status IN ('pending', 'processing')
        RETURNING id, "knowledgeBaseId", name, type, revision, content`,
      [documentId, revision],
    );
    return rows[0] ?? null;
  }

  async setProgress(documentId: string, revision: number, percent: number): Promise<void> {
    await this.pool.query(
      `UPDATE "KnowledgeDocument" SET progress = $3, "updatedAt" = now() WHERE id = $1 AND revision = $2 AND status = 'processing'`,
      [documentId, revision, Math.max(0, Math.min(100, Math.floor(percent)))],
    );
  }

  /** Chunks of the knowledge base not belonging to this document (the bound a new document must fit in). */
  async chunkCountExcluding(knowledgeBaseId: string, documentId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM "KnowledgeChunk" WHERE "knowledgeBaseId" = $1 AND "documentId" <> $2',
      [knowledgeBaseId, documentId],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Stores the document's chunks (replacing any from an earlier try) and marks it done, in one
   * transaction; false when the content was replaced meanwhile (the chunks are then not written).
   */
  async complete(doc: Pick<DocumentToIngest, 'id' | 'knowledgeBaseId' | 'revision'>, chunks: Array<{ text: string; embedding: ArrayLike<number> }>): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const current = await client.query('SELECT 1 FROM "KnowledgeDocument" WHERE id = $1 AND revision = $2 FOR UPDATE', [doc.id, doc.revision]);
      if (!current.rowCount) {
        await client.query('ROLLBACK');
        return false;
      }
      await client.query('DELETE FROM "KnowledgeChunk" WHERE "documentId" = $1', [doc.id]);
      const rowsPerInsert = 500;
      for (let start = 0; start < chunks.length; start += rowsPerInsert) {
        const part = chunks.slice(start, start + rowsPerInsert);
        await client.query(
          `INSERT INTO "KnowledgeChunk" ("documentId", "knowledgeBaseId", position, "text", embedding, terms)
           SELECT $1, $2, p.position, p.text, p.embedding::real[], CAST(p.terms AS tsvector)
             FROM jsonb_to_recordset($3::jsonb) AS p(position int, text text, embedding text, terms text)`,
          [doc.id, doc.knowledgeBaseId, JSON.stringify(part.map((c, i) => ({ position: start + i, text: c.text, embedding: `{${Array.from(c.embedding).join(',')}}`, terms: tsvectorLiteral(c.text) })))],
        );
      }
      await client.query(`UPDATE "KnowledgeDocument" SET status = 'done', progress = 100, error = NULL, "updatedAt" = now() WHERE id = $1`, [doc.id]);
      await client.query('COMMIT');
      return true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** The visible failed state, with the reason (no secret: callers pass classified messages). */
  async fail(documentId: string, revision: number, error: string): Promise<void> {
    await this.pool.query(
      `UPDATE "KnowledgeDocument" SET status = 'failed', error = $3, "updatedAt" = now() WHERE id = $1 AND revision = $2`,
      [documentId, revision, error.slice(0, 10_000)],
    );
  }

  /** Documents still waiting for ingestion (their job may never have been published), oldest first. */
  async pending(limit = 100): Promise<Array<{ id: string; knowledgeBaseId: string; revision: number }>> {
    const { rows } = await this.pool.query<{ id: string; knowledgeBaseId: string; revision: number }>(
      `SELECT id, "knowledgeBaseId", revision FROM "KnowledgeDocument" WHERE status = 'pending' ORDER BY "updatedAt" LIMIT $1`,
      [limit],
    );
    return rows;
  }

  async document(id: string): Promise<{ id: string; name: string; status: KnowledgeDocumentStatus; error: string | null; progress: number; revision: number } | null> {
    const { rows } = await this.pool.query<{ id: string; name: string; status: KnowledgeDocumentStatus; error: string | null; progress: number; revision: number }>(
      'SELECT id, name, status, error, progress, revision FROM "KnowledgeDocument" WHERE id = $1',
      [id],
    );
    return rows[0] ?? null;
  }
}
