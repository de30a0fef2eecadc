import { createInbox, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { HOST_REPLY_SCHEMA, HOST_STREAM_CHUNK_SCHEMA, LIMITS, SCHEMA_HEADER, pluginSubjects, type ContentElement, type HostErrorCode, type HostReply, type HostRequest, type LlmMessage, type MessageChain } from './wire.js';

/** A host call Conveyor refused or could not answer; `code` says why. */
export class HostError extends Error {
  constructor(readonly code: HostErrorCode | 'timeout', message: string) {
    super(message);
    this.name = 'HostError';
  }
}

/** What a plugin may ask of Conveyor (LangBot's plugin host API). */
export interface Host {
  /** The plugin's own key/value storage (text values; bounded: see LIMITS). */
  readonly storage: {
    get(key: string): Promise<string | null>;
    set(key: string, value: string): Promise<void>;
    delete(key: string): Promise<boolean>;
    list(prefix?: string): Promise<string[]>;
  };
  /**
   * The model of a pipeline that binds this plugin (its primary, then its fallbacks). With `onDelta`,
   * the answer streams: each piece of text as it comes, then the whole message.
   */
  invokeLlm(pipelineId: string, messages: LlmMessage[], options?: { onDelta?: (text: string) => void }): Promise<{ message: LlmMessage; model: string }>;
  /** Unit-length embeddings from a model with the `embedding` ability. */
  embed(modelId: string, texts: string[]): Promise<number[][]>;
  /** Relevance scores from a model with the `rerank` ability, best first as the model answers. */
  rerank(modelId: string, query: string, documents: string[]): Promise<Array<{ index: number; score: number }>>;
  /** Chunks of a knowledge base that a pipeline binding this plugin retrieves from, best first. */
  retrieve(knowledgeBaseId: string, query: string, topK?: number): Promise<Array<{ text: string; score: number; documentId: string }>>;
  /** The settings an admin gave the plugin: the installation's, with a pipeline's over them when one is named. */
  settings(pipelineId?: string): Promise<Record<string, unknown>>;
  /** Sends a message to a chat of a bot whose pipeline binds this plugin (LangBot's `send_message`). */
  sendMessage(botId: string, target: { type: 'person' | 'group'; id: string }, messageChain: MessageChain): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Conveyor gives up on a call after LIMITS.hostCallMs; the plugin waits a little longer for that answer. */
const WAIT_MS = LIMITS.hostCallMs + 5_000;

type Body<R extends HostRequest> = R extends unknown ? Omit<R, 'v' | 'plugin'> : never;

/**
 * The host API over the plugin's connection. Each call subscribes to a fresh inbox under the plugin's
 * inbox prefix, publishes its request on the plugin's host subject, and reads messages until the final
 * answer (a streamed call's text comes before it).
 */
export function hostClient(nc: NatsConnection, prefix: string, plugin: string): Host {
  const subjects = pluginSubjects(prefix);
  const call = async <R extends HostRequest>(body: Body<R>, onDelta?: (text: string) => void): Promise<Record<string, unknown>> => {
    const inbox = createInbox(subjects.inboxPrefix(plugin));
    const data = encoder.encode(JSON.stringify({ v: 1, plugin, ...body }));
    if (data.byteLength > LIMITS.payloadBytes) throw new HostError('invalid', `a request is at most ${LIMITS.payloadBytes} bytes`);
    const sub = nc.subscribe(inbox, { timeout: WAIT_MS });
    try {
      const headers = natsHeaders();
      nc.publish(subjects.host(plugin), data, { reply: inbox, headers });
      for await (const msg of sub) {
        const schema = msg.headers?.get(SCHEMA_HEADER);
        const parsed = JSON.parse(decoder.decode(msg.data)) as HostReply | { v: 1; delta: string };
        if (schema === HOST_STREAM_CHUNK_SCHEMA && 'delta' in parsed) {
          onDelta?.(parsed.delta);
          continue;
        }
        if (schema !== HOST_REPLY_SCHEMA || !('ok' in parsed)) continue;
        if (!parsed.ok) throw new HostError(parsed.error.code, parsed.error.message);
        return parsed.result;
      }
      throw new HostError('unavailable', 'the connection closed before Conveyor answered');
    } catch (err) {
      if (err instanceof HostError) throw err;
      const code = (err as { code?: unknown })?.code;
      if (code === 'TIMEOUT' || /timeout/i.test(String((err as Error)?.name))) throw new HostError('timeout', `no answer within ${WAIT_MS} ms`);
      throw err;
    } finally {
      sub.unsubscribe();
    }
  };
  return {
    storage: {
      get: async (key) => (await call({ op: 'storage.get', key })).value as string | null,
      set: async (key, value) => void (await call({ op: 'storage.set', key, value })),
      delete: async (key) => (await call({ op: 'storage.delete', key })).deleted === true,
      list: async (prefix = '') => (await call({ op: 'storage.list', prefix })).keys as string[],
    },
    invokeLlm: async (pipelineId, messages, options = {}) => {
      const result = await call({ op: 'llm.invoke', pipelineId, messages, stream: options.onDelta !== undefined }, options.onDelta);
      return { message: result.message as LlmMessage, model: result.model as string };
    },
    embed: async (modelId, texts) => (await call({ op: 'embeddings', modelId, texts })).embeddings as number[][],
    rerank: async (modelId, query, documents) => (await call({ op: 'rerank', modelId, query, documents })).results as Array<{ index: number; score: number }>,
    sendMessage: async (botId, target, messageChain) => void (await call({ op: 'message.send', botId, target, messageChain })),
    settings: async (pipelineId) => (await call({ op: 'settings.get', ...(pipelineId === undefined ? {} : { pipelineId }) })).values as Record<string, unknown>,
    retrieve: async (knowledgeBaseId, query, topK) => (await call({ op: 'knowledge.retrieve', knowledgeBaseId, query, ...(topK ? { topK } : {}) })).chunks as Array<{ text: string; score: number; documentId: string }>,
  };
}

/** The text of a message's content. */
export function messageText(message: LlmMessage): string {
  return typeof message.content === 'string' ? message.content : (message.content ?? []).map((p: ContentElement) => (p.type === 'text' ? p.text : '')).join('');
}
