import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anthropicThinking, geminiThinkingConfig, ollamaThink, openAiReasoningEffort } from './reasoning.js';
import { openAiRequest, openAiMessages } from './openai.js';
import type { ResolvedModel } from '../model.js';

test('provider_default (or no level) sends nothing to any API', () => {
  for (const level of [undefined, 'provider_default'] as const) {
    assert.equal(openAiReasoningEffort(level), undefined);
    assert.equal(anthropicThinking(level), undefined);
    assert.equal(geminiThinkingConfig(level), undefined);
    assert.equal(ollamaThink(level), undefined);
  }
});

test('each level onto each API', () => {
  assert.deepEqual((['disabled', 'enabled', 'minimal', 'low', 'high', 'max'] as const).map(openAiReasoningEffort), ['none', 'medium', 'minimal', 'low', 'high', 'xhigh']);
  assert.deepEqual(anthropicThinking('disabled'), { type: 'disabled' });
  assert.deepEqual(anthropicThinking('minimal'), { type: 'enabled', budget_tokens: 1024 });
  assert.deepEqual(anthropicThinking('high'), { type: 'enabled', budget_tokens: 8192 });
  assert.deepEqual(geminiThinkingConfig('enabled'), { thinkingBudget: -1, includeThoughts: true });
  assert.deepEqual(geminiThinkingConfig('disabled'), { thinkingBudget: 0 });
  assert.deepEqual((['disabled', 'enabled', 'minimal', 'medium', 'xhigh'] as const).map(ollamaThink), [false, true, 'low', 'medium', 'high']);
});

test('OpenAI-compatible request: reasoning_effort from the level, over the extra arguments; native reasoning blocks left out', () => {
  const model: ResolvedModel = { id: 'm', baseUrl: 'https://api.openai.com/v1', apiKey: 'k', modelId: 'gpt-x', abilities: [], extraArgs: { reasoning_effort: 'low', temperature: 1 }, timeoutMs: 1000 };
  assert.equal(openAiRequest({ model: { ...model, reasoning: 'high' }, messages: [] }).reasoning_effort, 'high');
  assert.equal(openAiRequest({ model, messages: [] }).reasoning_effort, 'low');
  const sent = openAiMessages([{ role: 'assistant', content: 'a', reasoning_blocks: [{ type: 'thinking', thinking: 't', signature: 's' }] }]);
  assert.deepEqual(sent, [{ role: 'assistant', content: 'a' }]);
});
