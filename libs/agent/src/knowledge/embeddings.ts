import { LIMITS } from '@conveyor/contracts';
import type { ResolvedModel } from '../model.js';
import type { OpenAIClientPool } from '../client-pool.js';
import { ProviderAnswerError, providerFor, type ProviderEmbeddings } from '../providers/index.js';
import type { GenAiCallContext } from '../genai-semconv.js';
import { inKnowledgeModelCall } from './call-telemetry.js';

/** Why knowledge work failed; callers decide on the code (retry, fail the document, go on without context). */
export type KnowledgeErrorCode = 'embedding_failed' | 'embedding_invalid' | 'rerank_failed' | 'model_missing' | 'knowledge_base_missing' | 'document_unreadable' | 'document_too_large';

export class KnowledgeError extends Error {
  constructor(readonly code: KnowledgeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KnowledgeError';
  }
}

/** Scales a vector to length 1, so cosine similarity is a dot product; a zero vector is refused. */
export function unitVector(values: readonly number[]): Float32Array {
  let sum = 0;
  for (const v of values) sum += v * v;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw new KnowledgeError('embedding_invalid', 'the embedding model returned a zero or non-finite vector');
  return Float32Array.from(values, (v) => v / norm);
}

/**
 * Embeds `texts` through the model's API (an OpenAI-compatible `/embeddings`, Ollama's `/api/embed`,
 * Gemini's `batchEmbedContents`), `LIMITS.embeddingBatch` texts per request, and returns unit vectors
 * in the texts' order. `onBatch` reports progress. Each request is an `embeddings <model>` span and
 * counts in the GenAI metrics, with `telemetry`'s bot and pipeline.
 */
export async function embedTexts(
  pool: OpenAIClientPool,
  model: ResolvedModel,
  texts: readonly string[],
  options: { signal?: AbortSignal; onBatch?: (done: number) => Promise<void> | void; telemetry?: GenAiCallContext } = {},
): Promise<Float32Array[]> {
  const provider = providerFor(model);
  const embed = provider.embed;
  if (!embed) throw new KnowledgeError('embedding_failed', `embedding model ${model.id}: the ${provider.kind} API has no embeddings; choose an OpenAI-compatible, Gemini or Ollama model`);
  const out: Float32Array[] = [];
  for (let start = 0; start < texts.length; start += LIMITS.embeddingBatch) {
    const input = texts.slice(start, start + LIMITS.embeddingBatch);
    const vectors = await inKnowledgeModelCall('embeddings', model, options.telemetry, { 'gen_ai.request.encoding_formats': ['float'], 'conveyor.embeddings.inputs': input.length }, async (call) => {
      let answer: ProviderEmbeddings;
      try {
        answer = await embed({ pool, model, texts: input, signal: options.signal });
      } catch (err) {
        if (options.signal?.aborted) throw err;
        if (err instanceof ProviderAnswerError) throw new KnowledgeError('embedding_invalid', `embedding model ${model.id}: ${err.message}`, { cause: err });
        throw new KnowledgeError('embedding_failed', `embedding model ${model.id} failed: ${(err as Error).message}`, { cause: err });
      }
      call.inputTokens(answer.inputTokens);
      call.responseModel(answer.responseModel);
      const dims = answer.vectors[0]?.length;
      if (dims) call.span.setAttribute('gen_ai.embeddings.dimension.count', dims);
      return answer.vectors;
    });
    if (vectors.length !== input.length) {
      throw new KnowledgeError('embedding_invalid', `embedding model ${model.id} answered ${vectors.length} embeddings for ${input.length} texts`);
    }
    const dims = vectors[0].length;
    for (const v of vectors) {
      if (v.length !== dims || (out.length > 0 && v.length !== out[0].length)) {
        throw new KnowledgeError('embedding_invalid', `embedding model ${model.id} answered vectors of different lengths`);
      }
      out.push(unitVector(v));
    }
    await options.onBatch?.(out.length);
  }
  return out;
}
