import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmMessage } from '@conveyor/contracts';
import { anthropicMessages, anthropicRequest, finishReasonOf } from './anthropic.js';
import type { ResolvedModel } from '../model.js';

const model: ResolvedModel = { id: 'c', provider: 'anthropic', baseUrl: 'https://api.anthropic.com', apiKey: 'k', modelId: 'claude-x', abilities: ['func_call'], extraArgs: {}, timeoutMs: 1000 };

test('the OpenAI-shaped history becomes Messages API turns: system apart, tool results in user turns, thinking first', () => {
  const history: LlmMessage[] = [
    { role: 'system', content: 'be brief' },
    { role: 'system', content: 'answer in English' },
    { role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }, { type: 'image_url', image_url: { url: 'https://img.example/cat.jpg' } }] },
    {
      role: 'assistant',
      content: '<think>\nlooking\n</think>\nLet me check.',
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }, { id: 'toolu_2', type: 'function', function: { name: 'bad', arguments: 'not json' } }],
      reasoning_blocks: [{ type: 'thinking', thinking: 'looking', signature: 'sig' }, { type: 'redacted_thinking', data: 'opaque' }, { type: 'thought_signature', signature: 'gemini-only' }],
    },
    { role: 'tool', tool_call_id: 'toolu_1', content: '{"animal":"cat"}' },
    { role: 'tool', tool_call_id: 'toolu_2', content: 'err: bad arguments' },
    { role: 'user', content: 'thanks' },
  ];
  const { system, messages } = anthropicMessages(history);
  assert.equal(system, 'be brief\n\nanswer in English');
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.deepEqual(messages[0].content, [
    { type: 'text', text: 'what is this?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
    { type: 'image', source: { type: 'url', url: 'https://img.example/cat.jpg' } },
  ]);
  assert.deepEqual(messages[1].content, [
    { type: 'thinking', thinking: 'looking', signature: 'sig' },
    { type: 'redacted_thinking', data: 'opaque' },
    { type: 'text', text: 'Let me check.' },
    { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'cat' } },
    { type: 'tool_use', id: 'toolu_2', name: 'bad', input: {} },
  ]);
  // Both results and the next user text in one user turn, the failure marked as an error.
  assert.deepEqual(messages[2].content, [
    { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"animal":"cat"}' },
    { type: 'tool_result', tool_use_id: 'toolu_2', content: 'err: bad arguments', is_error: true },
    { type: 'text', text: 'thanks' },
  ]);
});

test('a thinking block without its signature is not sent back (the API would refuse it)', () => {
  const { messages } = anthropicMessages([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a', reasoning_blocks: [{ type: 'thinking', thinking: 'local model thought' }] }]);
  assert.deepEqual(messages[1].content, [{ type: 'text', text: 'a' }]);
});

test('request: tools as input schemas, tool_choice mapped, max_tokens required and above the thinking budget', () => {
  const tools = [{ type: 'function' as const, function: { name: 'weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const r = anthropicRequest({ model: { ...model, extraArgs: { temperature: 0.2, tool_choice: 'required' }, reasoning: 'medium' }, messages: [{ role: 'user', content: 'hi' }], tools });
  assert.equal(r.model, 'claude-x');
  assert.equal(JSON.parse(JSON.stringify(r)).temperature, 0.2, 'other extra arguments go as they are');
  assert.deepEqual(r.tools, [{ name: 'weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]);
  assert.deepEqual(r.tool_choice, { type: 'any' });
  assert.deepEqual(r.thinking, { type: 'enabled', budget_tokens: 4096 });
  assert.equal(r.max_tokens, 4096 + 4096);
  assert.equal('system' in r, false);
  const plain = anthropicRequest({ model: { ...model, extraArgs: { max_tokens: 1000 } }, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(plain.max_tokens, 1000);
  assert.equal('thinking' in plain, false);
  assert.equal('tools' in plain, false);
  assert.deepEqual(anthropicRequest({ model: { ...model, reasoning: 'disabled' }, messages: [{ role: 'user', content: 'hi' }] }).thinking, { type: 'disabled' });
});

test('stop reasons in OpenAI names', () => {
  assert.deepEqual(['end_turn', 'tool_use', 'max_tokens', 'refusal', 'stop_sequence'].map(finishReasonOf), ['stop', 'tool_calls', 'length', 'content_filter', 'stop']);
  assert.equal(finishReasonOf(null), null);
});
