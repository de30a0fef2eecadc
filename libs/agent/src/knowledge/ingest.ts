import { setTimeout as sleep } from 'node:timers/promises';
import { extractText, getDocumentProxy } from 'unpdf';
import { LIMITS } from '@conveyor/contracts';
import { inSpan, meter } from '@conveyor/telemetry';
import type { OpenAIClientPool } from '../client-pool.js';
import type { ResolvedModel } from '../model.js';
import type { AgentLogger } from '../agent-loop.js';
import { chunkText } from './chunk.js';
import { epubText, htmlText, xlsxText } from './document-formats.js';
import { embedTexts, KnowledgeError } from './embeddings.js';

export interface IngestDocument {
  id: string;
  knowledgeBaseId: string;
  name: string;
  type: string;
  revision: number;
  content: Buffer;
}

/** The ingestion side of the knowledge store (Postgres' KnowledgeStore in the runner). */
export interface IngestStore {
  knowledgeBase(id: string): Promise<{ embeddingModelId: string; chunkSize: number; chunkOverlap: number } | null>;
  claim(documentId: string, revision: number): Promise<IngestDocument | null>;
  setProgress(documentId: string, revision: number, percent: number): Promise<void>;
  chunkCountExcluding(knowledgeBaseId: string, documentId: string): Promise<number>;
  complete(doc: Pick<IngestDocument, 'id' | 'knowledgeBaseId' | 'revision'>, chunks: Array<{ text: string; embedding: Float32Array }>): Promise<boolean>;
  fail(documentId: string, revision: number, error: string): Promise<void>;
  ensureVectorIndex(knowledgeBaseId: string, dims: number): Promise<boolean>;
}

export interface IngestDeps {
  store: IngestStore;
  model(id: string): Promise<ResolvedModel | null>;
  pool: OpenAIClientPool;
  logger: AgentLogger;
  signal?: AbortSignal;
  /** Tries of one embedding request before the document fails (default 3), 500 ms · 2ⁿ apart. */
  embeddingAttempts?: number;
  retryBaseMs?: number;
}

/**
 * The text of a document: text and Markdown decoded as UTF-8, PDF pages (unpdf, pdf.js) joined by
 * blank lines, DOCX paragraphs (mammoth), HTML as plain text, XLSX rows with their column headers, and
 * EPUB sections in reading order. A file that cannot be parsed, or holds more text than a
 * document may, is a code-classified error that fails the document.
 */
export async function documentText(doc: Pick<IngestDocument, 'name' | 'type' | 'content'>): Promise<string> {
  let text: string;
  try {
    switch (doc.type) {
      case 'text':
      case 'markdown':
        text = new TextDecoder('utf-8').decode(doc.content).replace(/^\uFEFF/, '');
        break;
      case 'pdf': {
        const pdf = await getDocumentProxy(new Uint8Array(doc.content));
        try {
          text = (await extractText(pdf, { mergePages: false })).text.join('\n\n');
        } finally {
          await pdf.destroy();
        }
        break;
      }
      case 'docx': {
        // Loaded with the first DOCX (some 130 modules), not with every runner.
        const { default: mammoth } = await import('mammoth');
        text = (await mammoth.extractRawText({ buffer: doc.content })).value;
        break;
      }
      case 'html':
        text = htmlText(new TextDecoder('utf-8').decode(doc.content));
        break;
      case 'xlsx':
        text = await xlsxText(doc.content);
        break;
      case 'epub':
        text = await epubText(doc.content);
        break;
      default:
        throw new Error(`documents of type ${doc.type} cannot be read`);
    }
  } catch (err) {
    throw new KnowledgeError('document_unreadable', `${doc.name}: cannot read the ${doc.type} document: ${(err as Error).message}`, { cause: err });
  }
  if (text.length > LIMITS.knowledgeDocumentChars) {
    throw new KnowledgeError('document_too_large', `${doc.name}: ${text.length} characters of text, more than the ${LIMITS.knowledgeDocumentChars} a document may have`);
  }
  return text.replace(/\u0000/g, '');
}

const ingested = meter.createCounter('conveyor_knowledge_documents', { description: 'Knowledge base documents ingested, by outcome (done, failed, stale)' });

export type IngestOutcome = 'done' | 'failed' | 'stale';

/**
 * One ingestion job: claim the document at its revision, extract its text, cut it into the knowledge
 * base's chunks, embed them batch by batch (reporting progress), store them and mark the document
 * done. A document that cannot succeed (unreadable, too large, the embedding model failing after its
 * bounded tries) is marked failed with the reason and the job ends; anything else (the database)
 * throws, so the bus redelivers the job.
 */
export async function ingestDocument(job: { documentId: string; revision: number }, deps: IngestDeps): Promise<IngestOutcome> {
  const doc = await deps.store.claim(job.documentId, job.revision);
  if (!doc) {
    ingested.add(1, { outcome: 'stale' });
    return 'stale';
  }
  return inSpan('knowledge ingest', { 'conveyor.knowledge.base_id': doc.knowledgeBaseId, 'conveyor.knowledge.document_id': doc.id }, async (span) => {
    try {
      const kb = await deps.store.knowledgeBase(doc.knowledgeBaseId);
      if (!kb) throw new KnowledgeError('knowledge_base_missing', `knowledge base ${doc.knowledgeBaseId} not found`);
      const model = await deps.model(kb.embeddingModelId);
      if (!model) throw new KnowledgeError('model_missing', `embedding model ${kb.embeddingModelId} not found`);
      const pieces = chunkText(await documentText(doc), kb.chunkSize, kb.chunkOverlap);
      const room = LIMITS.knowledgeBaseChunks - (await deps.store.chunkCountExcluding(doc.knowledgeBaseId, doc.id));
      if (pieces.length > room) throw new KnowledgeError('document_too_large', `${doc.name}: ${pieces.length} chunks, the knowledge base has room for ${Math.max(0, room)} (at most ${LIMITS.knowledgeBaseChunks})`);
      span.setAttribute('conveyor.knowledge.chunks', pieces.length);
      const embeddings: Float32Array[] = [];
      for (let start = 0; start < pieces.length; start += LIMITS.embeddingBatch) {
        const batch = pieces.slice(start, start + LIMITS.embeddingBatch);
        embeddings.push(...(await withRetries(() => embedTexts(deps.pool, model, batch, { signal: deps.signal }), deps)));
        await deps.store.setProgress(doc.id, doc.revision, (embeddings.length / pieces.length) * 100);
      }
      if (embeddings.length) await deps.store.ensureVectorIndex(doc.knowledgeBaseId, embeddings[0].length);
      const stored = await deps.store.complete(doc, pieces.map((text, i) => ({ text, embedding: embeddings[i] })));
      ingested.add(1, { outcome: stored ? 'done' : 'stale' });
      deps.logger.info({ documentId: doc.id, knowledgeBase: doc.knowledgeBaseId, chunks: pieces.length, stored }, stored ? 'knowledge document ingested' : 'knowledge document replaced while it was ingested; the newer revision is ingested by its own job');
      return stored ? 'done' : 'stale';
    } catch (err) {
      if (!(err instanceof KnowledgeError) || deps.signal?.aborted) throw err;
      await deps.store.fail(doc.id, doc.revision, err.message);
      ingested.add(1, { outcome: 'failed' });
      span.setAttribute('conveyor.knowledge.error', err.code);
      deps.logger.error({ documentId: doc.id, knowledgeBase: doc.knowledgeBaseId, code: err.code, err: err.message }, 'knowledge document failed');
      return 'failed';
    }
  });
}

async function withRetries<T>(fn: () => Promise<T>, deps: IngestDeps): Promise<T> {
  const attempts = deps.embeddingAttempts ?? 3;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof KnowledgeError) || err.code !== 'embedding_failed' || attempt >= attempts || deps.signal?.aborted) {
        if (err instanceof KnowledgeError && err.code === 'embedding_failed') throw new KnowledgeError(err.code, `${err.message} (after ${attempt} tries)`, { cause: err });
        throw err;
      }
      deps.logger.warn({ attempt, err: err.message }, 'embedding request failed; trying again');
      await sleep((deps.retryBaseMs ?? 500) * 2 ** (attempt - 1), undefined, { signal: deps.signal });
    }
  }
}
