// What Conveyor does for a plugin that calls it (LangBot's plugin host API): its own storage, a bound
// pipeline's model, embeddings and rerank by model id, retrieval from a knowledge base a bound
// pipeline uses. Who is calling was settled by the transport (the plugin's own subject); whether the
// plugin may use the pipeline or knowledge base it names is settled here, and a refusal is audited.
import type { DirectSendReply, DirectSendRequest, ModelSelection, PluginHostErrorCode, PluginHostRequest, PluginHostResults } from '@conveyor/contracts';
import type { OpenAIClientPool } from './client-pool.js';
import type { ResolvedModel } from './model.js';
import type { AgentLogger } from './agent-loop.js';
import { complete, streamChat } from './llm-call.js';
import { embedTexts, KnowledgeError } from './knowledge/embeddings.js';
import { rerank } from './knowledge/rerank.js';
import type { KnowledgeSource } from './knowledge/retrieval.js';

/** A host call refused or failed, with the code the plugin reads. */
export class PluginHostError extends Error {
  constructor(readonly code: PluginHostErrorCode, message: string) {
    super(message);
    this.name = 'PluginHostError';
  }
}

/** Whether a pipeline exists and binds the plugin, and the models it runs. */
export type PipelineAccess = { access: 'bound'; models: ModelSelection } | { access: 'not_bound' } | { access: 'not_found' };

export interface PluginHostPorts {
  /** The plugin's own storage; a bound it breaks throws a PluginHostError `too_large`. */
  storage: {
    get(plugin: string, key: string): Promise<string | null>;
    set(plugin: string, key: string, value: string): Promise<number>;
    delete(plugin: string, key: string): Promise<boolean>;
    keys(plugin: string, prefix: string): Promise<string[]>;
  };
  pipeline(plugin: string, pipelineId: string): Promise<PipelineAccess>;
  /** The settings an admin gave the plugin: the installation's, with the pipeline's over them when given. */
  settings(plugin: string, pipelineId: string | undefined): Promise<Record<string, unknown>>;
  /** Whether a bot exists and its pipeline binds the plugin. */
  bot(plugin: string, botId: string): Promise<'bound' | 'not_bound' | 'not_found'>;
  /** Asks a dispatcher to send a message to a chat. */
  sendToChat(request: DirectSendRequest): Promise<DirectSendReply>;
  /** Whether a pipeline that binds the plugin retrieves from the knowledge base. */
  retrievesFrom(plugin: string, knowledgeBaseId: string): Promise<boolean>;
  /** The selection's models with their keys, primary first, skipping unusable ones. */
  resolveModels(selection: ModelSelection): Promise<ResolvedModel[]>;
  model(id: string): Promise<ResolvedModel | null>;
  knowledge: KnowledgeSource;
  pool: OpenAIClientPool;
  /** Records a refused call (who, what, which resource, why) where operators audit changes. */
  audit(entry: { plugin: string; op: string; resource: string; reason: string }): Promise<void>;
  logger: AgentLogger;
}

export class PluginHostApi {
  constructor(private readonly ports: PluginHostPorts) {}

  /**
   * Answers one call. `emit` sends a streamed `llm.invoke`'s text as it comes; the returned result is
   * the final answer. Throws PluginHostError for a refusal or a failure the plugin should read.
   */
  async handle<R extends PluginHostRequest>(request: R, emit: (delta: string) => void, signal?: AbortSignal): Promise<PluginHostResults[R['op']]>;
  async handle(request: PluginHostRequest, emit: (delta: string) => void, signal?: AbortSignal): Promise<PluginHostResults[PluginHostRequest['op']]> {
    const { storage } = this.ports;
    switch (request.op) {
      case 'storage.get':
        return { value: await storage.get(request.plugin, request.key) };
      case 'storage.set':
        return { bytes: await storage.set(request.plugin, request.key, request.value) };
      case 'storage.delete':
        return { deleted: await storage.delete(request.plugin, request.key) };
      case 'storage.list':
        return { keys: await storage.keys(request.plugin, request.prefix) };
      case 'llm.invoke':
        return this.invoke(request, emit, signal);
      case 'embeddings': {
        const model = await this.modelWith(request.modelId, 'embedding');
        const vectors = await this.backend(() => embedTexts(this.ports.pool, model, request.texts, { signal }));
        return { embeddings: vectors.map((v) => Array.from(v)) };
      }
      case 'rerank': {
        const model = await this.modelWith(request.modelId, 'rerank');
        const scores = await this.backend(() => rerank(model, request.query, request.documents, { signal }));
        return { results: scores.map((s) => ({ index: s.index, score: s.relevanceScore })) };
      }
      case 'knowledge.retrieve':
        return this.retrieve(request, signal);
      case 'message.send': {
        const access = await this.ports.bot(request.plugin, request.botId);
        if (access === 'not_found') throw new PluginHostError('not_found', `no bot ${JSON.stringify(request.botId)}`);
        if (access === 'not_bound') return this.refuse(request, `bot:${request.botId}`, `the pipeline of bot ${JSON.stringify(request.botId)} does not bind plugin ${request.plugin}`);
        const sent = await this.ports.sendToChat({ v: 1, botId: request.botId, target: request.target, messageChain: request.messageChain, origin: `plugin:${request.plugin}` });
        if (sent.ok) return { sent: true };
        throw new PluginHostError(sent.error.code === 'failed' ? 'unavailable' : sent.error.code === 'disabled' ? 'forbidden' : sent.error.code, sent.error.message);
      }
      case 'settings.get': {
        if (request.pipelineId !== undefined) {
          const access = await this.ports.pipeline(request.plugin, request.pipelineId);
          if (access.access === 'not_found') throw new PluginHostError('not_found', `no pipeline ${JSON.stringify(request.pipelineId)}`);
          if (access.access === 'not_bound') return this.refuse(request, `pipeline:${request.pipelineId}`, `pipeline ${JSON.stringify(request.pipelineId)} does not bind plugin ${request.plugin}`);
        }
        return { values: await this.ports.settings(request.plugin, request.pipelineId) };
      }
    }
  }

  private async invoke(request: Extract<PluginHostRequest, { op: 'llm.invoke' }>, emit: (delta: string) => void, signal?: AbortSignal): Promise<PluginHostResults['llm.invoke']> {
    const access = await this.ports.pipeline(request.plugin, request.pipelineId);
    if (access.access === 'not_found') throw new PluginHostError('not_found', `no pipeline ${JSON.stringify(request.pipelineId)}`);
    if (access.access === 'not_bound') return this.refuse(request, `pipeline:${request.pipelineId}`, `pipeline ${JSON.stringify(request.pipelineId)} does not bind plugin ${request.plugin}`);
    const models = await this.ports.resolveModels(access.models);
    if (models.length === 0) throw new PluginHostError('unavailable', `pipeline ${JSON.stringify(request.pipelineId)} has no usable model`);
    let lastError: unknown;
    // LangBot's fallback: the next model when one fails before answering; a stream that already sent
    // text cannot start over on another model.
    for (const model of models) {
      let sent = false;
      try {
        if (!request.stream) {
          const answer = await complete(this.ports.pool, model, request.messages, { removeThink: false, signal });
          return { message: answer.message, model: model.id };
        }
        let text = '';
        for await (const delta of streamChat(this.ports.pool, model, request.messages, { removeThink: false, signal })) {
          if (!delta.content) continue;
          text += delta.content;
          sent = true;
          emit(delta.content);
        }
        return { message: { role: 'assistant', content: text }, model: model.id };
      } catch (err) {
        if (signal?.aborted) throw err;
        lastError = err;
        this.ports.logger.warn({ plugin: request.plugin, model: model.id, err: (err as Error).message }, 'plugin host: model call failed');
        if (sent) break;
      }
    }
    throw new PluginHostError('unavailable', `the pipeline's models failed: ${(lastError as Error)?.message ?? 'no answer'}`);
  }

  private async retrieve(request: Extract<PluginHostRequest, { op: 'knowledge.retrieve' }>, signal?: AbortSignal): Promise<PluginHostResults['knowledge.retrieve']> {
    const kb = await this.ports.knowledge.knowledgeBase(request.knowledgeBaseId);
    if (!kb) throw new PluginHostError('not_found', `no knowledge base ${JSON.stringify(request.knowledgeBaseId)}`);
    if (kb.retriever) throw new PluginHostError('invalid', `knowledge base ${kb.id} is backed by plugin ${kb.retriever.plugin}'s retriever ${kb.retriever.name}, not by documents`);
    if (!(await this.ports.retrievesFrom(request.plugin, kb.id))) {
      return this.refuse(request, `knowledge-base:${kb.id}`, `no pipeline binding plugin ${request.plugin} retrieves from knowledge base ${JSON.stringify(kb.id)}`);
    }
    let embedding: Float32Array | undefined;
    if (kb.retrievalMode !== 'fulltext') {
      const model = await this.ports.model(kb.embeddingModelId);
      if (!model) throw new PluginHostError('unavailable', `the embedding model ${kb.embeddingModelId} of knowledge base ${kb.id} is not usable`);
      [embedding] = await this.backend(() => embedTexts(this.ports.pool, model, [request.query], { signal }));
    }
    const hits = await this.ports.knowledge.search(kb.id, { text: request.query, embedding }, request.topK ?? kb.topK, kb.retrievalMode);
    return { chunks: hits.map((h) => ({ text: h.text, score: h.score ?? 0, documentId: h.documentId ?? '' })) };
  }

  private async modelWith(id: string, ability: 'embedding' | 'rerank'): Promise<ResolvedModel> {
    const model = await this.ports.model(id);
    if (!model) throw new PluginHostError('not_found', `no usable model ${JSON.stringify(id)}`);
    if (!model.abilities.includes(ability)) throw new PluginHostError('invalid', `model ${JSON.stringify(id)} lacks the ${ability} ability`);
    return model;
  }

  /** A model or backend call whose failure the plugin reads as `unavailable`. */
  private async backend<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof PluginHostError) throw err;
      throw new PluginHostError('unavailable', err instanceof KnowledgeError ? err.message : `the backend failed: ${(err as Error).message}`);
    }
  }

  private async refuse(request: PluginHostRequest, resource: string, reason: string): Promise<never> {
    await this.ports.audit({ plugin: request.plugin, op: request.op, resource, reason });
    this.ports.logger.warn({ plugin: request.plugin, op: request.op, resource }, 'plugin host call refused: not bound');
    throw new PluginHostError('forbidden', reason);
  }
}
