// POST /models/:id/test: one small call to the model, timed, so an operator sees at once whether the
// URL, the model name and the key work. The key is sent to the model only, never logged or returned.
import { ModelProviderKind, type AdminApi } from '@conveyor/contracts';
import { OpenAIClientPool, providerFor } from '@conveyor/agent';

export interface ModelUnderTest {
  /** The stored kind; absent or `openai`: an OpenAI-compatible endpoint. */
  provider?: string;
  baseUrl: string;
  modelId: string;
  abilities: string[];
  timeoutMs: number;
  apiKey: string | undefined;
}

/** A test call never waits longer than this, whatever the model's own timeout. */
const MAX_TEST_MS = 30_000;
const SAMPLE_CHARS = 200;

/** The native providers' clients, kept across tests like the runner keeps its own. */
const nativeClients = new OpenAIClientPool(32);

export async function testModel(model: ModelUnderTest, fetchImpl: typeof fetch = fetch): Promise<AdminApi.ModelTestResult> {
  const kind = ModelProviderKind.safeParse(model.provider ?? 'openai');
  if (!kind.success) return { ok: false, latencyMs: 0, error: `unknown provider ${JSON.stringify(model.provider)}` };
  if (kind.data !== 'openai') return testNative(kind.data, model);
  const embedding = model.abilities.includes('embedding') && !model.abilities.includes('func_call');
  const url = `${model.baseUrl.replace(/\/+$/, '')}/${embedding ? 'embeddings' : 'chat/completions'}`;
  const body = embedding
    ? { model: model.modelId, input: 'ping' }
    : { model: model.modelId, messages: [{ role: 'user', content: 'Reply with the word pong.' }], max_tokens: 16, stream: false };
  const started = performance.now();
  try {
    const res = await fetchImpl(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(model.apiKey ? { authorization: `Bearer ${model.apiKey}` } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(Math.min(model.timeoutMs, MAX_TEST_MS)),
    });
    const text = await res.text();
    const latencyMs = Math.round(performance.now() - started);
    if (!res.ok) return { ok: false, latencyMs, error: `HTTP ${res.status}: ${text.slice(0, SAMPLE_CHARS)}` };
    return { ok: true, latencyMs, sample: sampleOf(text, embedding) };
  } catch (err) {
    const latencyMs = Math.round(performance.now() - started);
    const name = err instanceof Error ? err.name : '';
    return { ok: false, latencyMs, error: name === 'TimeoutError' ? `no answer within ${Math.min(model.timeoutMs, MAX_TEST_MS)} ms` : `cannot reach ${url}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function sampleOf(text: string, embedding: boolean): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (embedding) {
      const data = field(parsed, 'data');
      const first = Array.isArray(data) ? field(data[0], 'embedding') : undefined;
      return Array.isArray(first) ? `embedding of ${first.length} dimensions` : text.slice(0, SAMPLE_CHARS);
    }
    const choices = field(parsed, 'choices');
    const content = Array.isArray(choices) ? field(field(choices[0], 'message'), 'content') : undefined;
    return typeof content === 'string' ? content.slice(0, SAMPLE_CHARS) : text.slice(0, SAMPLE_CHARS);
  } catch {
    return text.slice(0, SAMPLE_CHARS);
  }
}

function field(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' && key in value ? Reflect.get(value, key) : undefined;
}

/**
 * A native API's test: the same call the runner makes (the provider's own request and answer
 * mapping), one short non-streamed answer. Embedding models are OpenAI-compatible only.
 */
async function testNative(kind: Exclude<ModelProviderKind, 'openai'>, model: ModelUnderTest): Promise<AdminApi.ModelTestResult> {
  const timeoutMs = Math.min(model.timeoutMs, MAX_TEST_MS);
  const resolved = { id: 'model-test', provider: kind, baseUrl: model.baseUrl, apiKey: model.apiKey ?? '', modelId: model.modelId, abilities: model.abilities, extraArgs: { max_tokens: 16 }, timeoutMs };
  const started = performance.now();
  try {
    const r = await providerFor(resolved).complete({ pool: nativeClients, model: resolved, messages: [{ role: 'user', content: 'Reply with the word pong.' }], removeThink: true, signal: AbortSignal.timeout(timeoutMs) });
    const text = typeof r.message.content === 'string' ? r.message.content : '';
    return { ok: true, latencyMs: Math.round(performance.now() - started), sample: text.slice(0, SAMPLE_CHARS) };
  } catch (err) {
    const latencyMs = Math.round(performance.now() - started);
    const status = typeof err === 'object' && err !== null && 'status' in err && typeof err.status === 'number' ? err.status : undefined;
    const name = err instanceof Error ? err.name : '';
    const message = err instanceof Error ? err.message : String(err);
    if (status !== undefined) return { ok: false, latencyMs, error: `HTTP ${status}: ${message.slice(0, SAMPLE_CHARS)}` };
    if (name === 'TimeoutError' || name === 'ProviderTimeoutError' || name === 'APIConnectionTimeoutError') return { ok: false, latencyMs, error: `no answer within ${timeoutMs} ms` };
    return { ok: false, latencyMs, error: `cannot reach ${model.baseUrl}: ${message.slice(0, SAMPLE_CHARS)}` };
  }
}
