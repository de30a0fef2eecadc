// Knowledge bases through the admin API: their settings, their documents' upload, ingestion state,
// re-index and removal. Ingestion itself stays on the runner (it holds the embedding models' keys and
// the bounded `ingest` consumer): an upload stores the document as `pending` and announces its job;
// the runner's sweep publishes any job whose announcement was lost.
import type { AdminApi } from '@conveyor/contracts';
import { documentTypeOf, KnowledgeDocumentError, type KnowledgeStore, type Prisma, type PrismaClient } from '@conveyor/persistence';
import { recordAudit } from './audit.js';
import type { Principal } from './auth.js';
import { AdminApiError } from './errors.js';
import type { Paged } from './config-store.js';

/** Publishes a document's ingestion job; a failure is left to the runner's sweep. */
export type IngestAnnouncer = (job: { knowledgeBaseId: string; documentId: string; revision: number }) => Promise<void>;

const DOCUMENT_FIELDS = { id: true, knowledgeBaseId: true, name: true, type: true, status: true, progress: true, error: true, revision: true, createdAt: true, updatedAt: true } as const;
type DocumentRow = Prisma.KnowledgeDocumentGetPayload<{ select: typeof DOCUMENT_FIELDS }>;

const STATUSES = ['pending', 'processing', 'done', 'failed'] as const;
const TYPES = ['text', 'markdown', 'pdf', 'docx', 'html', 'xlsx', 'epub'] as const;
const MODES = ['vector', 'fulltext', 'hybrid'] as const;
/** The settings a knowledge base's chunks were made with: changing one ingests its documents again. */
const CHUNKING = ['embeddingModelId', 'chunkSize', 'chunkOverlap'] as const;

const oneOf = <T extends string>(options: readonly T[], value: string, fallback: T): T => options.find((o) => o === value) ?? fallback;

/** The knowledge bases a pipeline config retrieves from (`ai.local-agent.knowledge-bases`). */
export function knowledgeBaseIdsNamedBy(config: unknown): string[] {
  const ids = (config as { ai?: { 'local-agent'?: { 'knowledge-bases'?: unknown } } } | null)?.ai?.['local-agent']?.['knowledge-bases'];
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}

export class KnowledgeBases {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly store: KnowledgeStore,
    private readonly announce: IngestAnnouncer,
    /** The retrievers a live plugin offers; null when it is not running. */
    private readonly retrieversOf: (plugin: string) => string[] | null = () => null,
  ) {}

  async list(page: AdminApi.PageQuery): Promise<Paged<AdminApi.KnowledgeBase>> {
    const rows = await this.prisma.knowledgeBase.findMany({ orderBy: { id: 'asc' }, take: page.limit + 1, ...(page.cursor ? { where: { id: { gt: page.cursor } } } : {}) });
    const more = rows.length > page.limit;
    const shown = more ? rows.slice(0, page.limit) : rows;
    const items = await this.withCounts(shown);
    return { items, nextCursor: more ? shown[shown.length - 1].id : null };
  }

  async get(id: string): Promise<AdminApi.KnowledgeBase> {
    const row = await this.prisma.knowledgeBase.findUnique({ where: { id } });
    if (!row) throw AdminApiError.notFound('knowledge base', id);
    return (await this.withCounts([row]))[0];
  }

  async create(actor: Principal, input: AdminApi.KnowledgeBaseCreateInput): Promise<AdminApi.KnowledgeBase> {
    if (input.embeddingModelId) await this.checkModel('body.embeddingModelId', input.embeddingModelId, 'embedding');
    if (input.retriever) {
      const offered = this.retrieversOf(input.retriever.plugin);
      if (!offered) throw AdminApiError.invalid('body.retriever.plugin', `plugin ${input.retriever.plugin} is not running; start it, then create the knowledge base`);
      if (!offered.includes(input.retriever.name)) throw AdminApiError.invalid('body.retriever.name', `plugin ${input.retriever.plugin} offers no retriever ${input.retriever.name} (it offers: ${offered.join(', ') || 'none'})`);
    }
    if (input.rerankModelId) await this.checkModel('body.rerankModelId', input.rerankModelId, 'rerank');
    const { retriever, embeddingModelId, ...settings } = input;
    await this.prisma.$transaction(async (tx) => {
      if (await tx.knowledgeBase.findUnique({ where: { id: input.id }, select: { id: true } })) {
        throw new AdminApiError('conflict', `body.id: knowledge base ${JSON.stringify(input.id)} exists`, { field: 'body.id' });
      }
      await tx.knowledgeBase.create({ data: { ...settings, embeddingModelId: embeddingModelId ?? '', retrieverPlugin: retriever?.plugin ?? null, retriever: retriever?.name ?? null, rerankModelId: input.rerankModelId ?? null } });
      await recordAudit(tx, { actor: actor.actor, resource: 'knowledge-base', resourceId: input.id, action: 'create', changes: Object.keys(input) });
    });
    return this.get(input.id);
  }

  /**
   * Changes the fields given. Retrieval reads the settings for every question, so the next query
   * uses them. A new embedding model or chunking sends every document back to `pending` (in the same
   * transaction as the change, so no question meets chunks of the old model) and announces their jobs.
   * A knowledge base declared in conveyor.yaml gets the file's settings again when the file is synced
   * (a deploy's migrate step).
   */
  async update(actor: Principal, id: string, input: AdminApi.KnowledgeBaseUpdateInput): Promise<AdminApi.KnowledgeBase> {
    if (input.rerankModelId) await this.checkModel('body.rerankModelId', input.rerankModelId, 'rerank');
    if (input.embeddingModelId) await this.checkModel('body.embeddingModelId', input.embeddingModelId, 'embedding');
    const existing = await this.prisma.knowledgeBase.findUnique({ where: { id } });
    if (!existing) throw AdminApiError.notFound('knowledge base', id);
    if (existing.retriever && (input.embeddingModelId !== undefined || input.chunkSize !== undefined || input.chunkOverlap !== undefined || input.retrievalMode !== undefined)) {
      throw AdminApiError.invalid('body', `knowledge base ${id} is backed by plugin ${existing.retrieverPlugin}'s retriever: it has no embedding model, chunking or retrieval mode of its own`);
    }
    const changes = (Object.keys(input) as Array<keyof typeof input>).filter((k) => input[k] !== undefined && input[k] !== existing[k]);
    if (changes.length === 0) return this.get(id);
    const chunkSize = input.chunkSize ?? existing.chunkSize;
    const chunkOverlap = input.chunkOverlap ?? existing.chunkOverlap;
    if (chunkOverlap >= chunkSize) throw AdminApiError.invalid('body.chunkOverlap', `chunkOverlap (${chunkOverlap}) must be less than chunkSize (${chunkSize})`);
    const requeued = changes.some((k) => (CHUNKING as readonly string[]).includes(k))
      ? await this.knowledgeWrite(() => this.store.rechunk(id, { embeddingModelId: input.embeddingModelId, chunkSize: input.chunkSize, chunkOverlap: input.chunkOverlap }), id)
      : [];
    await this.prisma.$transaction(async (tx) => {
      const rest = changes.filter((k) => !(CHUNKING as readonly string[]).includes(k));
      if (rest.length) await tx.knowledgeBase.update({ where: { id }, data: Object.fromEntries(rest.map((k) => [k, input[k]])) });
      await recordAudit(tx, { actor: actor.actor, resource: 'knowledge-base', resourceId: id, action: 'update', changes });
    });
    for (const doc of requeued) await this.announce({ knowledgeBaseId: id, documentId: doc.id, revision: doc.revision });
    return this.get(id);
  }

  /** Refused while a pipeline retrieves from it: its documents and chunks go with it. */
  async remove(actor: Principal, id: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const users = (await tx.pipeline.findMany({ select: { id: true, config: true } })).filter((p) => knowledgeBaseIdsNamedBy(p.config).includes(id)).map((p) => p.id);
      if (users.length) throw new AdminApiError('conflict', `knowledge base ${JSON.stringify(id)} is used by pipeline(s) ${users.join(', ')}; change them first`, { field: 'path.id' });
      const { count } = await tx.knowledgeBase.deleteMany({ where: { id } });
      if (!count) throw AdminApiError.notFound('knowledge base', id);
      await recordAudit(tx, { actor: actor.actor, resource: 'knowledge-base', resourceId: id, action: 'delete' });
    });
  }

  async documents(knowledgeBaseId: string, page: AdminApi.PageQuery): Promise<Paged<AdminApi.KnowledgeDocument>> {
    await this.get(knowledgeBaseId);
    const rows = await this.prisma.knowledgeDocument.findMany({
      where: { knowledgeBaseId, ...(page.cursor ? { id: { gt: page.cursor } } : {}) },
      orderBy: { id: 'asc' },
      take: page.limit + 1,
      select: DOCUMENT_FIELDS,
    });
    const more = rows.length > page.limit;
    const shown = more ? rows.slice(0, page.limit) : rows;
    return { items: await this.documentDtos(shown), nextCursor: more ? shown[shown.length - 1].id : null };
  }

  /**
   * Stores an uploaded file as a document (replacing one of the same name) and announces its job.
   * The formats, the size bound and the one-at-a-time rule are the knowledge store's.
   */
  async upload(actor: Principal, knowledgeBaseId: string, file: { name: string; content: Buffer }): Promise<AdminApi.KnowledgeDocumentUploaded> {
    const backing = await this.prisma.knowledgeBase.findUnique({ where: { id: knowledgeBaseId }, select: { retrieverPlugin: true } });
    if (backing?.retrieverPlugin) throw new AdminApiError('conflict', `knowledge base ${knowledgeBaseId} is backed by plugin ${backing.retrieverPlugin}'s retriever; its content lives in the plugin`, { field: 'path.id' });
    const name = file.name.replace(/^.*[\\/]/, '').trim();
    if (!name || name.length > 255) throw AdminApiError.invalid('body.file', 'the file needs a name of 1 to 255 characters');
    const type = documentTypeOf(name);
    if (!type) throw AdminApiError.invalid('body.file', `${name}: unsupported document type (text: .txt .md .markdown .csv .tsv .log; .html .htm; .pdf; .docx; .xlsx; .epub)`);
    const added = await this.knowledgeWrite(() => this.store.addDocument(knowledgeBaseId, name, type, file.content, { oneAtATime: true }), knowledgeBaseId);
    if (added.outcome !== 'unchanged') {
      await this.prisma.$transaction((tx) => recordAudit(tx, { actor: actor.actor, resource: 'knowledge-base', resourceId: knowledgeBaseId, action: added.outcome === 'created' ? 'add-document' : 'replace-document', changes: [name] }));
      await this.announce({ knowledgeBaseId, documentId: added.id, revision: added.revision });
    }
    return { outcome: added.outcome, document: await this.document(knowledgeBaseId, added.id) };
  }

  async reindex(actor: Principal, knowledgeBaseId: string, documentId: string): Promise<AdminApi.KnowledgeDocument> {
    const doc = await this.knowledgeWrite(() => this.store.reindexDocument(knowledgeBaseId, documentId), knowledgeBaseId);
    await this.prisma.$transaction((tx) => recordAudit(tx, { actor: actor.actor, resource: 'knowledge-base', resourceId: knowledgeBaseId, action: 'reindex-document', changes: [documentId] }));
    await this.announce({ knowledgeBaseId, documentId: doc.id, revision: doc.revision });
    return this.document(knowledgeBaseId, doc.id);
  }

  async removeDocument(actor: Principal, knowledgeBaseId: string, documentId: string): Promise<void> {
    if (!(await this.store.deleteDocument(knowledgeBaseId, documentId))) throw new AdminApiError('not_found', `knowledge base ${JSON.stringify(knowledgeBaseId)} has no document ${JSON.stringify(documentId)}`, { field: 'path.documentId' });
    await this.prisma.$transaction((tx) => recordAudit(tx, { actor: actor.actor, resource: 'knowledge-base', resourceId: knowledgeBaseId, action: 'delete-document', changes: [documentId] }));
  }

  private async document(knowledgeBaseId: string, id: string): Promise<AdminApi.KnowledgeDocument> {
    const row = await this.prisma.knowledgeDocument.findFirst({ where: { id, knowledgeBaseId }, select: DOCUMENT_FIELDS });
    if (!row) throw new AdminApiError('not_found', `knowledge base ${JSON.stringify(knowledgeBaseId)} has no document ${JSON.stringify(id)}`, { field: 'path.documentId' });
    return (await this.documentDtos([row]))[0];
  }

  /** The knowledge store's refusals as the API's answers. */
  private async knowledgeWrite<T>(write: () => Promise<T>, knowledgeBaseId: string): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (!(err instanceof KnowledgeDocumentError)) throw err;
      switch (err.code) {
        case 'unknown_knowledge_base': throw AdminApiError.notFound('knowledge base', knowledgeBaseId);
        case 'unknown_document': throw new AdminApiError('not_found', err.message, { field: 'path.documentId' });
        case 'knowledge_base_busy': throw new AdminApiError('conflict', err.message, { field: 'path.id' });
        case 'document_too_large': throw AdminApiError.invalid('body.file', err.message);
      }
    }
  }

  private async checkModel(field: string, id: string, ability: 'embedding' | 'rerank'): Promise<void> {
    const model = await this.prisma.llmModel.findUnique({ where: { id }, select: { abilities: true, provider: true } });
    if (!model) throw AdminApiError.invalid(field, `model ${JSON.stringify(id)} does not exist`);
    if (!model.abilities.includes(ability)) throw AdminApiError.invalid(field, `model ${JSON.stringify(id)} lacks the ${ability} ability`);
    // Embeddings: OpenAI-compatible /embeddings, Ollama's /api/embed, Gemini's batchEmbedContents; reranking: an OpenAI-compatible /rerank.
    const speaks = ability === 'embedding' ? ['openai', 'ollama', 'gemini'] : ['openai'];
    if (!speaks.includes(model.provider)) throw AdminApiError.invalid(field, `model ${JSON.stringify(id)} speaks the ${model.provider} API, which has no ${ability === 'embedding' ? 'embeddings' : 'rerank'} endpoint; choose a model of ${speaks.join(', ')}`);
  }

  private async withCounts(rows: Array<Prisma.KnowledgeBaseGetPayload<object>>): Promise<AdminApi.KnowledgeBase[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [byStatus, chunks] = await Promise.all([
      this.prisma.knowledgeDocument.groupBy({ by: ['knowledgeBaseId', 'status'], where: { knowledgeBaseId: { in: ids } }, _count: { _all: true } }),
      this.prisma.knowledgeChunk.groupBy({ by: ['knowledgeBaseId'], where: { knowledgeBaseId: { in: ids } }, _count: { _all: true } }),
    ]);
    return rows.map((r) => {
      const documents = { pending: 0, processing: 0, done: 0, failed: 0 };
      for (const g of byStatus) if (g.knowledgeBaseId === r.id) documents[oneOf(STATUSES, g.status, 'failed')] += g._count._all;
      return {
        id: r.id,
        name: r.name,
        description: r.description,
        embeddingModelId: r.embeddingModelId,
        topK: r.topK,
        chunkSize: r.chunkSize,
        chunkOverlap: r.chunkOverlap,
        rerankModelId: r.rerankModelId,
        retrievalMode: oneOf(MODES, r.retrievalMode, 'hybrid'),
        retriever: r.retrieverPlugin && r.retriever ? { plugin: r.retrieverPlugin, name: r.retriever } : null,
        documents,
        chunks: chunks.find((c) => c.knowledgeBaseId === r.id)?._count._all ?? 0,
        createdAt: r.createdAt.toISOString(),
        updatedAt: r.updatedAt.toISOString(),
      };
    });
  }

  /** Sizes and chunk counts in SQL, so a listing never loads the documents' bytes. */
  private async documentDtos(rows: DocumentRow[]): Promise<AdminApi.KnowledgeDocument[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [sizes, chunks] = await Promise.all([
      this.prisma.$queryRaw<Array<{ id: string; bytes: number }>>`SELECT id, octet_length(content)::int AS bytes FROM "KnowledgeDocument" WHERE id = ANY(${ids}::text[])`,
      this.prisma.knowledgeChunk.groupBy({ by: ['documentId'], where: { documentId: { in: ids } }, _count: { _all: true } }),
    ]);
    return rows.map((r) => ({
      id: r.id,
      knowledgeBaseId: r.knowledgeBaseId,
      name: r.name,
      type: oneOf(TYPES, r.type, 'text'),
      status: oneOf(STATUSES, r.status, 'failed'),
      progress: r.progress,
      error: r.error,
      revision: r.revision,
      bytes: sizes.find((s) => s.id === r.id)?.bytes ?? 0,
      chunks: chunks.find((c) => c.documentId === r.id)?._count._all ?? 0,
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    }));
  }
}
