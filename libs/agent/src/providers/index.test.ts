import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL_PRESETS, ModelProviderKind } from '@conveyor/contracts';
import { genAiProviderNameOf, MODEL_PROVIDERS, providerFor } from './index.js';
import type { ResolvedModel } from '../model.js';

const base: ResolvedModel = { id: 'm', baseUrl: 'http://127.0.0.1:9/v1', apiKey: '', modelId: 'x', abilities: [], extraArgs: {}, timeoutMs: 1000 };

test('every kind has its provider; no kind is an OpenAI-compatible model', () => {
  for (const kind of ModelProviderKind.options) assert.equal(MODEL_PROVIDERS[kind].kind, kind);
  assert.equal(providerFor(base).kind, 'openai');
});

test('gen_ai.provider.name: the native APIs name themselves whatever their URL; OpenAI-compatible ones by host', () => {
  assert.equal(genAiProviderNameOf({ ...base, provider: 'anthropic' }), 'anthropic');
  assert.equal(genAiProviderNameOf({ ...base, provider: 'gemini' }), 'gcp.gemini');
  assert.equal(genAiProviderNameOf({ ...base, provider: 'ollama' }), 'ollama');
  assert.equal(genAiProviderNameOf(base), 'openai_compatible');
  assert.equal(genAiProviderNameOf({ ...base, baseUrl: 'https://api.deepseek.com/v1' }), 'deepseek');
});

test('presets: unique ids, http(s) base URLs, a known kind each', () => {
  assert.equal(new Set(MODEL_PRESETS.map((p) => p.id)).size, MODEL_PRESETS.length);
  for (const p of MODEL_PRESETS) {
    assert.match(p.baseUrl, /^https?:\/\//, p.id);
    assert.ok(ModelProviderKind.options.includes(p.provider), p.id);
  }
  for (const id of ['deepseek', 'moonshot', 'zhipu', 'siliconflow', 'openrouter', 'groq', 'volcengine-ark', 'dashscope']) assert.ok(MODEL_PRESETS.some((p) => p.id === id && p.provider === 'openai'), id);
});
