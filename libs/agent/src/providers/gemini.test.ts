import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmMessage } from '@conveyor/contracts';
import { geminiContents, geminiEmbedRequest, geminiFinishReason, geminiRequest } from './gemini.js';
import type { ResolvedModel } from '../model.js';

const model: ResolvedModel = { id: 'g', provider: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: 'k', modelId: 'gemini-x', abilities: ['func_call'], extraArgs: {}, timeoutMs: 1000 };

test('history as contents: system instruction apart, function calls with their thought signatures, responses by name in one turn', () => {
  const history: LlmMessage[] = [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,BBBB' } }] },
    {
      role: 'assistant',
      content: 'Checking both.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }, { id: 'c2', type: 'function', function: { name: 'time', arguments: '' } }],
      reasoning_blocks: [{ type: 'thought_signature', signature: 'S1', tool_call_id: 'c1' }, { type: 'thought_signature', signature: 'T' }, { type: 'thinking', thinking: 'x', signature: 'anthropic-only' }],
    },
    { role: 'tool', tool_call_id: 'c1', content: '{"forecast":"sunny"}' },
    { role: 'tool', tool_call_id: 'c2', content: '"12:00"' },
  ];
  const { systemInstruction, contents } = geminiContents(history);
  assert.deepEqual(systemInstruction, { parts: [{ text: 'be brief' }] });
  assert.deepEqual(contents, [
    { role: 'user', parts: [{ text: 'see' }, { inlineData: { mimeType: 'image/jpeg', data: 'BBBB' } }] },
    { role: 'model', parts: [
      { text: 'Checking both.', thoughtSignature: 'T' },
      { functionCall: { name: 'weather', args: { city: 'Oslo' } }, thoughtSignature: 'S1' },
      { functionCall: { name: 'time', args: {} } },
    ] },
    { role: 'user', parts: [
      { functionResponse: { name: 'weather', response: { result: '{"forecast":"sunny"}' } } },
      { functionResponse: { name: 'time', response: { result: '"12:00"' } } },
    ] },
  ]);
});

test('request: tools as function declarations with their JSON schema, sampling arguments in the generation config, thinking by level', () => {
  const tools = [{ type: 'function' as const, function: { name: 'weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, additionalProperties: false } } }];
  const r = geminiRequest({ model: { ...model, extraArgs: { temperature: 0.5, max_tokens: 100, stop: 'END', safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }] }, reasoning: 'low' }, messages: [{ role: 'user', content: 'hi' }], tools });
  assert.deepEqual(r.tools, [{ functionDeclarations: [{ name: 'weather', description: 'Weather', parametersJsonSchema: tools[0].function.parameters }] }]);
  assert.deepEqual(r.generationConfig, { temperature: 0.5, maxOutputTokens: 100, stopSequences: ['END'], thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } });
  assert.ok(r.safetySettings);
  assert.deepEqual(geminiRequest({ model: { ...model, reasoning: 'disabled' }, messages: [{ role: 'user', content: 'hi' }] }).generationConfig, { thinkingConfig: { thinkingBudget: 0 } });
  assert.equal('generationConfig' in geminiRequest({ model, messages: [{ role: 'user', content: 'hi' }] }), false);
});

test('finish reasons: a turn that called functions ends in tool_calls', () => {
  assert.equal(geminiFinishReason('STOP', true), 'tool_calls');
  assert.equal(geminiFinishReason('STOP', false), 'stop');
  assert.equal(geminiFinishReason('MAX_TOKENS', false), 'length');
  assert.equal(geminiFinishReason('SAFETY', false), 'content_filter');
  assert.equal(geminiFinishReason(undefined, false), null);
});

test('embed request: one EmbedContentRequest per text naming the model, task type and dimensions from the extra arguments', () => {
  const r = geminiEmbedRequest({ model: { ...model, modelId: 'models/gemini-embedding-001', extraArgs: { taskType: 'RETRIEVAL_QUERY', dimensions: 768, temperature: 1 } }, texts: ['a', 'b'] });
  assert.deepEqual(r, {
    requests: [
      { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'a' }] }, taskType: 'RETRIEVAL_QUERY', outputDimensionality: 768 },
      { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'b' }] }, taskType: 'RETRIEVAL_QUERY', outputDimensionality: 768 },
    ],
  });
});
