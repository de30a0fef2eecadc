import type { ResolvedModel } from '../model.js';
import { KnowledgeError } from './embeddings.js';

export interface RerankScore {
  index: number;
  relevanceScore: number;
}

/** Answers larger than this are not read: a rerank of 64 documents answers a few kilobytes. */
const MAX_RERANK_RESPONSE_BYTES = 1_048_576;

/**
 * Scores `documents` against `query` with a Jina/Cohere-style `POST {baseUrl}/rerank` (what LangBot
 * calls for OpenAI-compatible gateways): `{model, query, documents, top_n}` → `{results: [{index,
 * relevance_score}]}` (`score` accepted too).
 */
export async function rerank(model: ResolvedModel, query: string, documents: readonly string[], options: { signal?: AbortSignal } = {}): Promise<RerankScore[]> {
  const signals = [AbortSignal.timeout(model.timeoutMs), ...(options.signal ? [options.signal] : [])];
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (model.apiKey) headers.authorization = `Bearer ${model.apiKey}`;
  let body: unknown;
  try {
    const response = await fetch(`${model.baseUrl.replace(/\/+$/, '')}/rerank`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ ...model.extraArgs, model: model.modelId, query, documents, top_n: documents.length }),
      signal: AbortSignal.any(signals),
    });
    const text = await response.text();
    if (Buffer.byteLength(text) > MAX_RERANK_RESPONSE_BYTES) throw new Error(`answer of ${Buffer.byteLength(text)} bytes is too large`);
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${text.slice(0, 500)}`);
    body = JSON.parse(text);
  } catch (err) {
    if (options.signal?.aborted) throw err;
    throw new KnowledgeError('rerank_failed', `rerank model ${model.id} failed: ${(err as Error).message}`, { cause: err });
  }
  const results = (body as { results?: unknown }).results;
  if (!Array.isArray(results)) throw new KnowledgeError('rerank_failed', `rerank model ${model.id} answered without results`);
  return results.flatMap((r: { index?: unknown; relevance_score?: unknown; score?: unknown }) => {
    const index = typeof r.index === 'number' && Number.isInteger(r.index) ? r.index : 0;
    const score = typeof r.relevance_score === 'number' ? r.relevance_score : typeof r.score === 'number' ? r.score : 0;
    return [{ index, relevanceScore: score }];
  });
}
