import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APIConnectionTimeoutError, APIError } from 'openai';
import {
  contextMetricAttributes,
  contextSpanAttributes,
  errorType,
  inputContentAttributes,
  MAX_CONTENT_ATTRIBUTE_CHARS,
  outputContentAttributes,
  providerName,
  requestParameterAttributes,
  serverAttributes,
  sessionIdOf,
  UNKNOWN_OPENAI_COMPATIBLE_PROVIDER,
} from './genai-semconv.js';

test('the provider is read from the base URL, with the conventions\' well-known names', () => {
  const cases: [string, string][] = [
    ['https://api.openai.com/v1', 'openai'],
    ['https://api.deepseek.com', 'deepseek'],
    ['https://api.deepseek.com/v1', 'deepseek'],
    ['https://my-resource.openai.azure.com/openai/deployments/gpt-4o', 'azure.ai.openai'],
    ['https://my-resource.cognitiveservices.azure.com/openai/v1', 'azure.ai.openai'],
    ['https://my-project.services.ai.azure.com/models', 'azure.ai.inference'],
    ['https://generativelanguage.googleapis.com/v1beta/openai/', 'gcp.gemini'],
    ['https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/openapi', 'gcp.vertex_ai'],
    ['https://api.groq.com/openai/v1', 'groq'],
    ['https://api.mistral.ai/v1', 'mistral_ai'],
    ['https://api.x.ai/v1', 'x_ai'],
    ['https://api.perplexity.ai', 'perplexity'],
    ['https://api.anthropic.com/v1/', 'anthropic'],
    ['https://bedrock-runtime.us-west-2.amazonaws.com/openai/v1', 'aws.bedrock'],
    ['https://dashscope.aliyuncs.com/compatible-mode/v1', 'alibaba.dashscope'],
    ['https://api.moonshot.cn/v1', 'moonshot'],
    ['https://open.bigmodel.cn/api/paas/v4', 'zhipu_ai'],
    ['https://api.siliconflow.cn/v1', 'siliconflow'],
    ['https://openrouter.ai/api/v1', 'openrouter'],
    ['http://localhost:11434/v1', 'ollama'],
    ['http://ollama.ai-tools.svc:8080/v1', 'ollama'],
  ];
  for (const [url, provider] of cases) assert.equal(providerName(url), provider, url);
});

test('an endpoint that is not OpenAI is never reported as openai', () => {
  for (const url of ['http://127.0.0.1:8000/v1', 'https://llm.internal.example/v1', 'https://api.openai.com.evil.example/v1', 'https://notapi.openai.community/v1', 'https://s3.amazonaws.com/x', 'not a url']) {
    assert.equal(providerName(url), UNKNOWN_OPENAI_COMPATIBLE_PROVIDER, url);
  }
});

test('server address and port come from the base URL, the port from the scheme when absent', () => {
  assert.deepEqual(serverAttributes('https://api.openai.com/v1'), { 'server.address': 'api.openai.com', 'server.port': 443 });
  assert.deepEqual(serverAttributes('http://vllm.local/v1'), { 'server.address': 'vllm.local', 'server.port': 80 });
  assert.deepEqual(serverAttributes('http://127.0.0.1:11434/v1'), { 'server.address': '127.0.0.1', 'server.port': 11434 });
  assert.deepEqual(serverAttributes('http://[::1]:8080/v1'), { 'server.address': '::1', 'server.port': 8080 });
  // Credentials in the URL never become an attribute.
  assert.deepEqual(serverAttributes('https://user:pw@gw.example:8443/v1'), { 'server.address': 'gw.example', 'server.port': 8443 });
  assert.deepEqual(serverAttributes('nonsense'), {});
});

test('request parameters the extra arguments send become gen_ai.request.* attributes; wrong types are left out', () => {
  assert.deepEqual(
    requestParameterAttributes({ temperature: 0.2, top_p: 0.9, max_tokens: 512, frequency_penalty: 0.5, presence_penalty: -0.5, seed: 7, stop: ['END'], n: 2, top_k: 40, tool_choice: 'auto' }),
    {
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.top_k': 40,
      'gen_ai.request.frequency_penalty': 0.5,
      'gen_ai.request.presence_penalty': -0.5,
      'gen_ai.request.seed': 7,
      'gen_ai.request.max_tokens': 512,
      'gen_ai.request.choice.count': 2,
      'gen_ai.request.stop_sequences': ['END'],
    },
  );
  assert.deepEqual(requestParameterAttributes({ max_completion_tokens: 100, stop: 'x', n: 1 }), { 'gen_ai.request.max_tokens': 100, 'gen_ai.request.stop_sequences': ['x'] });
  assert.deepEqual(requestParameterAttributes({ temperature: 'hot', max_tokens: null, stop: [1, 2] }), {});
  assert.deepEqual(requestParameterAttributes({}), {});
});

test('error.type is the provider\'s status, timeout, or the error class, never message text', () => {
  assert.equal(errorType(APIError.generate(503, { error: { message: 'overloaded' } }, 'overloaded', new Headers())), '503');
  assert.equal(errorType(APIError.generate(429, undefined, 'slow down', new Headers())), '429');
  assert.equal(errorType(new APIConnectionTimeoutError()), 'timeout');
  assert.equal(errorType(new TypeError('fetch failed')), 'TypeError');
  assert.equal(errorType(new Error('model m returned no choices')), 'Error');
  assert.equal(errorType('a string'), '_OTHER');
  assert.equal(errorType(null), '_OTHER');
});

test('input content: system messages as instructions, the rest as typed parts; inline images are not copied', () => {
  const attributes = inputContentAttributes([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(5000)}` } }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: '{"hit":true}' },
  ]);
  assert.deepEqual(JSON.parse(String(attributes['gen_ai.system_instructions'])), [{ type: 'text', content: 'Be brief.' }]);
  const input = JSON.parse(String(attributes['gen_ai.input.messages'])) as { role: string; parts: Record<string, unknown>[] }[];
  assert.deepEqual(input.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.deepEqual(input[0].parts[0], { type: 'text', content: 'What is this?' });
  assert.equal(input[0].parts[1].type, 'uri');
  assert.equal(input[0].parts[1].modality, 'image');
  assert.ok(!String(input[0].parts[1].uri).includes('AAAA'), 'the base64 stays out');
  assert.deepEqual(input[1].parts, [{ type: 'tool_call', id: 'c1', name: 'lookup', arguments: { q: 'cat' } }]);
  assert.deepEqual(input[2].parts, [{ type: 'tool_call_response', id: 'c1', response: '{"hit":true}' }]);
  assert.equal(inputContentAttributes([{ role: 'user', content: 'hi' }])['gen_ai.system_instructions'], undefined);
});

test('output content carries the finish reason', () => {
  const out = JSON.parse(String(outputContentAttributes({ role: 'assistant', content: 'Hello' }, 'stop')['gen_ai.output.messages']));
  assert.deepEqual(out, [{ role: 'assistant', parts: [{ type: 'text', content: 'Hello' }], finish_reason: 'stop' }]);
});

test('a long history is cut from the oldest message and stays valid JSON', () => {
  const messages = Array.from({ length: 400 }, (_, i) => ({ role: 'user' as const, content: `message ${i} ${'x'.repeat(1000)}` }));
  const json = String(inputContentAttributes(messages)['gen_ai.input.messages']);
  assert.ok(json.length <= MAX_CONTENT_ATTRIBUTE_CHARS, `${json.length}`);
  const kept = JSON.parse(json) as { parts: { content: string }[] }[];
  assert.ok(kept.length > 10 && kept.length < 400);
  assert.match(kept.at(-1)!.parts[0].content, /^message 399 /, 'the newest message is kept');
  const huge = String(inputContentAttributes([{ role: 'user', content: 'y'.repeat(MAX_CONTENT_ATTRIBUTE_CHARS * 2) }])['gen_ai.input.messages']);
  assert.ok(huge.length <= MAX_CONTENT_ATTRIBUTE_CHARS && Array.isArray(JSON.parse(huge)));
});

test('identity: session, user and conversation on spans; only bot and pipeline on metrics', () => {
  const ctx = { botId: 'b1', pipelineId: 'p1', conversationId: 'c1', sessionId: sessionIdOf('b1', 'person', 'u9'), userId: 'u9' };
  assert.deepEqual(contextSpanAttributes(ctx), {
    'gen_ai.conversation.id': 'c1', 'session.id': 'b1:person_u9', 'user.id': 'u9', 'conveyor.bot.id': 'b1', 'conveyor.pipeline.id': 'p1',
  });
  assert.deepEqual(contextMetricAttributes(ctx), { 'conveyor.bot.id': 'b1', 'conveyor.pipeline.id': 'p1' });
  assert.deepEqual(contextSpanAttributes(undefined), {});
});
