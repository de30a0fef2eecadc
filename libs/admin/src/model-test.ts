// POST /models/:id/test: one small call to the model, timed, so an operator sees at once whether the
// URL, the model name and the key work. The key is sent to the model only, never logged or returned.
import type { AdminApi } from '@conveyor/contracts';

export interface ModelUnderTest {
  baseUrl: string;
  modelId: string;
  abilities: string[];
  timeoutMs: number;
  apiKey: string | undefined;
}

/** A test call never waits longer than this, whatever the model's own timeout. */
const MAX_TEST_MS = 30_000;
const SAMPLE_CHARS = 200;

export async function testModel(model: ModelUnderTest, fetchImpl: typeof fetch = fetch): Promise<AdminApi.ModelTestResult> {
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
