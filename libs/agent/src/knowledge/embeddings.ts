import type OpenAI from 'openai';
import { LIMITS } from '@conveyor/contracts';
import type { ResolvedModel } from '../model.js';

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
 * Embeds `texts` through the model's OpenAI-compatible `/embeddings`, `LIMITS.embeddingBatch` texts
 * per request, and returns unit vectors in the texts' order. `onBatch` reports progress.
 */
export async function embedTexts(
  client: OpenAI,
  model: ResolvedModel,
  texts: readonly string[],
  options: { signal?: AbortSignal; onBatch?: (done: number) => Promise<void> | void } = {},
): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (let start = 0; start < texts.length; start += LIMITS.embeddingBatch) {
    const input = texts.slice(start, start + LIMITS.embeddingBatch);
    let response: OpenAI.Embeddings.CreateEmbeddingResponse;
    try {
      response = await client.embeddings.create({ model: model.modelId, input, encoding_format: 'float' }, { signal: options.signal });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new KnowledgeError('embedding_failed', `embedding model ${model.id} failed: ${(err as Error).message}`, { cause: err });
    }
    const byIndex = [...(response.data ?? [])].sort((a, b) => a.index - b.index);
    if (byIndex.length !== input.length || byIndex.some((d, i) => d.index !== i || !Array.isArray(d.embedding))) {
      throw new KnowledgeError('embedding_invalid', `embedding model ${model.id} answered ${byIndex.length} embeddings for ${input.length} texts`);
    }
    const dims = byIndex[0].embedding.length;
    for (const d of byIndex) {
      if (d.embedding.length !== dims || (out.length > 0 && d.embedding.length !== out[0].length)) {
        throw new KnowledgeError('embedding_invalid', `embedding model ${model.id} answered vectors of different lengths`);
      }
      out.push(unitVector(d.embedding));
    }
    await options.onBatch?.(out.length);
  }
  return out;
}
