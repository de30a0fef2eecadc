import type { ResolvedModel } from '../model.js';
import type { GenAiCallContext } from '../genai-semconv.js';
import { inKnowledgeModelCall } from './call-telemetry.js';
import { KnowledgeError } from './embeddings.js';

export interface RerankScore {
  index: number;
  relevanceScore: number;
}

/** Answers larger than this are not read: a rerank of 64 documents answers a few kilobytes. */
const MAX_RERANK_RESPONSE_BYTES = 1_048_576;

/** A rerank answer that was not 2xx; its status is the span's and metrics' `error.type`. */
class RerankHttpError extends Error {
  constructor(readonly status: number, body: string) {
    super(`HTTP ${status}: ${body.slice(0, 500)}`);
    this.name = 'RerankHttpError';
  }
}

/** The tokens a rerank answer counted: Jina's `usage.total_tokens`, or `prompt_tokens` where a gateway reports OpenAI-style usage. */
function rerankTokens(body: unknown): number | undefined {
  const usage = typeof body === 'object' && body !== null ? (body as { usage?: { prompt_tokens?: unknown; total_tokens?: unknown } }).usage : undefined;
  const n = usage?.prompt_tokens ?? usage?.total_tokens;
  return typeof n === 'number' ? n : undefined;
}

/**
 * Scores `documents` against `query` with a Jina/Cohere-style `POST {baseUrl}/rerank` (what LangBot
 * calls for OpenAI-compatible gateways): `{model, query, documents, top_n}` → `{results: [{index,
 * relevance_score}]}` (`score` accepted too). The call is a `rerank <model>` span and counts in the
 * GenAI metrics, with `telemetry`'s bot and pipeline.
 */
export function rerank(model: ResolvedModel, query: string, documents: readonly string[], options: { signal?: AbortSignal; telemetry?: GenAiCallContext } = {}): Promise<RerankScore[]> {
  return inKnowledgeModelCall('rerank', model, options.telemetry, { 'conveyor.rerank.documents': documents.length }, async (call) => {
    const body = await rerankRequest(model, query, documents, options.signal);
    call.inputTokens(rerankTokens(body));
    const answeredModel = typeof body === 'object' && body !== null ? (body as { model?: unknown }).model : undefined;
    call.responseModel(typeof answeredModel === 'string' ? answeredModel : undefined);
    return scores(model, body);
  });
}

async function rerankRequest(model: ResolvedModel, query: string, documents: readonly string[], signal: AbortSignal | undefined): Promise<unknown> {
  const signals = [AbortSignal.timeout(model.timeoutMs), ...(signal ? [signal] : [])];
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
    if (!response.ok) throw new RerankHttpError(response.status, text);
    body = JSON.parse(text);
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new KnowledgeError('rerank_failed', `rerank model ${model.id} failed: ${(err as Error).message}`, { cause: err });
  }
  return body;
}

function scores(model: ResolvedModel, body: unknown): RerankScore[] {
  const results = typeof body === 'object' && body !== null ? (body as { results?: unknown }).results : undefined;
  if (!Array.isArray(results)) throw new KnowledgeError('rerank_failed', `rerank model ${model.id} answered without results`);
  return results.flatMap((r: { index?: unknown; relevance_score?: unknown; score?: unknown }) => {
    const index = typeof r.index === 'number' && Number.isInteger(r.index) ? r.index : 0;
    const score = typeof r.relevance_score === 'number' ? r.relevance_score : typeof r.score === 'number' ? r.score : 0;
    return [{ index, relevanceScore: score }];
  });
}
