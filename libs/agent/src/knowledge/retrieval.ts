import { LIMITS, type LlmMessage, type RunRequest } from '@conveyor/contracts';
import { currentTraceId, inSpan, meter } from '@conveyor/telemetry';
import type { OpenAIClientPool } from '../client-pool.js';
import type { ResolvedModel } from '../model.js';
import type { AgentLogger } from '../agent-loop.js';
import type { GenAiCallContext } from '../genai-semconv.js';
import { embedTexts, KnowledgeError } from './embeddings.js';
import { rerank } from './rerank.js';
import { combinedPrompt, retrievalText, withRetrievalText } from './template.js';

/** `vector`: by embedding; `fulltext`: by terms (no embedding call); `hybrid`: both, fused by rank. */
export type RetrievalMode = 'vector' | 'fulltext' | 'hybrid';

export interface KnowledgeBaseInfo {
  id: string;
  embeddingModelId: string;
  topK: number;
  rerankModelId: string | null;
  retrievalMode: RetrievalMode;
  /** A plugin's retriever backing it instead of documents. */
  retriever: { plugin: string; name: string } | null;
}

/** Where knowledge bases and their chunks live (Postgres' KnowledgeStore in the runner). */
export interface KnowledgeSource {
  knowledgeBase(id: string): Promise<KnowledgeBaseInfo | null>;
  search(knowledgeBaseId: string, query: { text: string; embedding?: Float32Array }, topK: number, mode: RetrievalMode): Promise<Array<{ text: string; score?: number; documentId?: string }>>;
}

export interface RetrievalDeps {
  source: KnowledgeSource;
  /** A model configuration by id with its key resolved; null when there is none. */
  model(id: string): Promise<ResolvedModel | null>;
  pool: OpenAIClientPool;
  logger: AgentLogger;
  signal?: AbortSignal;
  /** The run's bot and pipeline (and session ids) on the embedding and rerank calls' spans and metrics. */
  telemetry?: GenAiCallContext;
  /** Asks a plugin's retriever for a knowledge base's chunks; absent, such a knowledge base is skipped. */
  pluginRetriever?: (kb: KnowledgeBaseInfo & { retriever: { plugin: string; name: string } }, question: string) => Promise<string[]>;
}

const retrievals = meter.createCounter('conveyor_knowledge_retrievals', { description: 'Knowledge base retrievals before a model call, by outcome (hits, none, failed)' });

/**
 * LangBot's retrieval step of the local agent: for each bound knowledge base in order, take its top-k
 * chunks for the user's text by its retrieval mode (embedding the text unless the mode is full-text),
 * or from the plugin retriever backing it; rerank them when a rerank model is set (at most 64
 * documents, the best `rerankTopK` kept; a missing model or a failed rerank keeps the order); fill
 * `rag_combined_prompt_template` and put it in place of the user turn's first text. Only a user turn
 * with text retrieves. A failure is logged (with the trace id) and the messages go on unchanged.
 */
export async function withKnowledge(run: Pick<RunRequest, 'queryId' | 'messages' | 'knowledge'>, deps: RetrievalDeps): Promise<LlmMessage[]> {
  const binding = run.knowledge;
  const userTurn = run.messages.at(-1);
  if (!binding || !userTurn || userTurn.role !== 'user') return run.messages;
  const question = retrievalText(userTurn);
  if (!question) return run.messages;
  // The GenAI conventions' retrieval operation: a framework's retrieval step, named after the operation.
  const attributes = {
    'gen_ai.operation.name': 'retrieval',
    ...(binding.knowledgeBaseIds.length === 1 ? { 'gen_ai.data_source.id': binding.knowledgeBaseIds[0] } : {}),
    'conveyor.knowledge.base_ids': binding.knowledgeBaseIds,
  };
  return inSpan('retrieval', attributes, async (span) => {
    try {
      const entries = await retrieve(question, binding, deps);
      span.setAttribute('conveyor.knowledge.hits', entries.length);
      retrievals.add(1, { outcome: entries.length ? 'hits' : 'none' });
      if (entries.length === 0) return run.messages;
      return [...run.messages.slice(0, -1), withRetrievalText(userTurn, combinedPrompt(entries, question))];
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      span.setAttribute('conveyor.knowledge.hits', 0);
      span.setAttribute('conveyor.knowledge.error', err instanceof KnowledgeError ? err.code : 'internal');
      span.setAttribute('error.type', err instanceof KnowledgeError ? err.code : 'internal');
      retrievals.add(1, { outcome: 'failed' });
      deps.logger.warn(
        { queryId: run.queryId, knowledgeBases: binding.knowledgeBaseIds, code: err instanceof KnowledgeError ? err.code : undefined, err: (err as Error).message, trace_id: currentTraceId() },
        'knowledge retrieval failed; the message goes to the model without retrieved context',
      );
      return run.messages;
    }
  });
}

async function retrieve(question: string, binding: NonNullable<RunRequest['knowledge']>, deps: RetrievalDeps): Promise<string[]> {
  const hits: string[] = [];
  const embeddings = new Map<string, Float32Array>();
  let kbRerankModel: string | null = null;
  for (const id of binding.knowledgeBaseIds) {
    const kb = await deps.source.knowledgeBase(id);
    if (!kb) {
      deps.logger.warn({ knowledgeBase: id }, `Knowledge base ${id} not found, skipping`);
      continue;
    }
    kbRerankModel ??= kb.rerankModelId;
    if (kb.retriever) {
      const backed = { ...kb, retriever: kb.retriever };
      if (!deps.pluginRetriever) {
        deps.logger.warn({ knowledgeBase: id, plugin: kb.retriever.plugin }, `Knowledge base ${id} is backed by a plugin retriever this runner cannot call, skipping`);
        continue;
      }
      for (const text of (await deps.pluginRetriever(backed, question)).slice(0, kb.topK)) hits.push(text);
      continue;
    }
    let embedding = kb.retrievalMode === 'fulltext' ? undefined : embeddings.get(kb.embeddingModelId);
    if (!embedding && kb.retrievalMode !== 'fulltext') {
      const model = await deps.model(kb.embeddingModelId);
      if (!model) throw new KnowledgeError('model_missing', `embedding model ${kb.embeddingModelId} of knowledge base ${id} not found`);
      [embedding] = await embedTexts(deps.pool, model, [question], { signal: deps.signal, telemetry: deps.telemetry });
      embeddings.set(kb.embeddingModelId, embedding);
    }
    for (const hit of await deps.source.search(id, { text: question, embedding }, kb.topK, kb.retrievalMode)) hits.push(hit.text);
  }
  const rerankModelId = binding.rerankModel || kbRerankModel;
  if (hits.length === 0 || !rerankModelId) return hits;
  const model = await deps.model(rerankModelId);
  if (!model) {
    deps.logger.warn({ model: rerankModelId }, `Rerank model ${rerankModelId} not found, skipping rerank`);
    return hits;
  }
  try {
    const scores = await rerank(model, question, hits.slice(0, LIMITS.rerankDocuments), { signal: deps.signal, telemetry: deps.telemetry });
    return [...scores]
      .sort((a, b) => b.relevanceScore - a.relevanceScore)
      .slice(0, binding.rerankTopK)
      .filter((s) => s.index >= 0 && s.index < hits.length)
      .map((s) => hits[s.index]);
  } catch (err) {
    if (deps.signal?.aborted) throw err;
    deps.logger.warn({ model: rerankModelId, err: (err as Error).message }, 'Rerank failed, using original order');
    return hits;
  }
}
