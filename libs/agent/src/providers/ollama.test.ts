import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ollamaEmbedRequest, ollamaMessages, ollamaRequest } from './ollama.js';
import type { ResolvedModel } from '../model.js';

const model: ResolvedModel = { id: 'o', provider: 'ollama', baseUrl: 'http://127.0.0.1:11434', apiKey: '', modelId: 'qwen3', abilities: ['func_call'], extraArgs: {}, timeoutMs: 1000 };

test('messages: base64 images, tool calls with object arguments, thinking back on the assistant turn, results by tool name', () => {
  const out = ollamaMessages([
    { role: 'system', content: 'sys' },
    { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,CCCC' } }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
    { role: 'assistant', content: '<think>\nhm\n</think>\n', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }], reasoning_blocks: [{ type: 'thinking', thinking: 'hm' }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"forecast":"sunny"}' },
  ]);
  assert.deepEqual(out, [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'look[image https://x/y.png]', images: ['CCCC'] },
    { role: 'assistant', content: '', thinking: 'hm', tool_calls: [{ function: { name: 'weather', arguments: { city: 'Oslo' } } }] },
    { role: 'tool', content: '{"forecast":"sunny"}', tool_name: 'weather' },
  ]);
});

test('request: sampling arguments become options, request-level keys stay on top, think by level', () => {
  const r = ollamaRequest({ model: { ...model, extraArgs: { temperature: 0.1, num_ctx: 8192, max_tokens: 64, keep_alive: '5m', options: { seed: 1 } }, reasoning: 'disabled' }, messages: [{ role: 'user', content: 'hi' }] }, true);
  assert.deepEqual({ ...r, messages: undefined }, { keep_alive: '5m', model: 'qwen3', messages: undefined, stream: true, options: { seed: 1, temperature: 0.1, num_ctx: 8192, num_predict: 64 }, think: false });
  assert.equal(ollamaRequest({ model: { ...model, reasoning: 'medium' }, messages: [{ role: 'user', content: 'hi' }] }, false).think, 'medium');
  assert.equal('think' in ollamaRequest({ model, messages: [{ role: 'user', content: 'hi' }] }, false), false);
});

test('embed request: every text in one input list, only /api/embed keys of the extra arguments', () => {
  const r = ollamaEmbedRequest({ model: { ...model, modelId: 'nomic-embed-text', extraArgs: { truncate: false, dimensions: 256, temperature: 0.3 } }, texts: ['a', 'b'] });
  assert.deepEqual(r, { truncate: false, dimensions: 256, model: 'nomic-embed-text', input: ['a', 'b'] });
});
