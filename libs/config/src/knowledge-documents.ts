import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '@conveyor/contracts';
import type { PrismaClient } from '@conveyor/persistence';
import { documentTypeOf, type AddDocumentOutcome, type KnowledgeStore } from '@conveyor/persistence';
import { ConfigFileError, type ConfigIssue } from './errors.js';
import type { ConveyorConfig } from './types.js';

export interface StoredDocument {
  knowledgeBaseId: string;
  documentId: string;
  revision: number;
  name: string;
  outcome: AddDocumentOutcome;
}

/**
 * Stores every document `config` lists, under its file name (a file changed since the last run gets a
 * new revision and is ingested again; an unchanged one is left as it is). Every file is checked before
 * any is stored: a missing, unreadable, oversized or unsupported file stops setup naming it.
 */
export async function storeKnowledgeDocuments(store: KnowledgeStore, config: Pick<ConveyorConfig, 'file' | 'knowledgeDocuments'>): Promise<StoredDocument[]> {
  const issues: ConfigIssue[] = [];
  const files: Array<{ knowledgeBaseId: string; name: string; type: NonNullable<ReturnType<typeof documentTypeOf>>; content: Buffer }> = [];
  for (const doc of config.knowledgeDocuments) {
    const where = { path: `knowledgeBases[${doc.knowledgeBaseId}].documents` };
    const type = documentTypeOf(doc.path);
    if (!type) {
      issues.push({ ...where, message: `${doc.path}: unsupported document type (text: .txt .md .markdown .csv .log; .pdf; .docx)` });
      continue;
    }
    try {
      const size = (await stat(doc.path)).size;
      if (size > LIMITS.knowledgeDocumentBytes) {
        issues.push({ ...where, message: `${doc.path}: ${size} bytes, more than the ${LIMITS.knowledgeDocumentBytes} a document may have` });
        continue;
      }
      files.push({ knowledgeBaseId: doc.knowledgeBaseId, name: path.basename(doc.path), type, content: await readFile(doc.path) });
    } catch (err) {
      issues.push({ ...where, message: `${doc.path}: cannot read the file: ${(err as Error).message}` });
    }
  }
  if (issues.length) throw new ConfigFileError(config.file, issues);
  const stored: StoredDocument[] = [];
  for (const file of files) {
    const { id, revision, outcome } = await store.addDocument(file.knowledgeBaseId, file.name, file.type, file.content);
    stored.push({ knowledgeBaseId: file.knowledgeBaseId, documentId: id, revision, name: file.name, outcome });
  }
  return stored;
}

export interface KnowledgeBaseSync {
  created: string[];
  updated: string[];
  unchanged: string[];
  /** Updated ones whose documents went back to `pending` (a new embedding model or chunking). */
  rechunked: string[];
}

/** The settings a knowledge base's chunks were made with: changing one re-ingests its documents. */
const CHUNKING_FIELDS = ['embeddingModelId', 'chunkSize', 'chunkOverlap'] as const;

/**
 * Creates or updates the knowledge bases `config` declares (settings; documents are stored by
 * storeKnowledgeDocuments). A new embedding model or chunking sends the knowledge base's documents
 * back to `pending` (a runner ingests them again). A knowledge base no longer in the file is left as it
 * is, with its documents: deleting it would drop ingested chunks that pipelines may still retrieve from.
 */
export async function syncKnowledgeBases(prisma: PrismaClient, store: Pick<KnowledgeStore, 'rechunk'>, config: Pick<ConveyorConfig, 'knowledgeBases'>): Promise<KnowledgeBaseSync> {
  const out: KnowledgeBaseSync = { created: [], updated: [], unchanged: [], rechunked: [] };
  for (const kb of config.knowledgeBases) {
    const existing = await prisma.knowledgeBase.findUnique({ where: { id: kb.id } });
    if (!existing) {
      await prisma.knowledgeBase.create({ data: kb });
      out.created.push(kb.id);
    } else if ((Object.keys(kb) as Array<keyof typeof kb>).some((key) => existing[key] !== kb[key])) {
      if (CHUNKING_FIELDS.some((key) => existing[key] !== kb[key])) {
        await store.rechunk(kb.id, { embeddingModelId: kb.embeddingModelId, chunkSize: kb.chunkSize, chunkOverlap: kb.chunkOverlap });
        out.rechunked.push(kb.id);
      }
      await prisma.knowledgeBase.update({ where: { id: kb.id }, data: kb });
      out.updated.push(kb.id);
    } else {
      out.unchanged.push(kb.id);
    }
  }
  return out;
}
