import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAIClientPool } from './client-pool.js';
import { runLocalAgent, type AgentItem } from './agent-loop.js';
import type { ResolvedModel } from './model.js';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A model endpoint that answers every chat request with exactly these SSE bytes. */
async function rawModel(body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

test('a stream that fails after its finish reason emits no final chunk: the failure is the only end of the reply', async (t) => {
  const model = await rawModel(
    chunk({ role: 'assistant', content: '' }) + chunk({ content: 'partial' }) + chunk({}, 'stop') + 'event: error\ndata: {"error":{"message":"upstream exploded"}}\n\n',
  );
  t.after(() => model.close());
  const resolved: ResolvedModel = { id: 'm', baseUrl: model.url, apiKey: 'k', modelId: 'm', abilities: [], extraArgs: {}, timeoutMs: 10_000 };
  const items: AgentItem[] = [];
  const outcome = await runLocalAgent(
    {
      v: 1, queryId: '00000000-0000-4000-8000-000000000000', pipelineId: 'p', conversationId: 'c', model: { primary: 'm', fallbacks: [] }, stream: true,
      route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' },
      messages: [{ role: 'user', content: 'hi' }], exceptionHandling: 'show-hint', failureHint: 'Request failed.',
    },
    [resolved],
    { pool: new OpenAIClientPool(), logger: silent, emit: async (item) => void items.push(item) },
  );
  assert.equal(outcome.ok, false);
  assert.deepEqual(items.filter((i) => i.kind === 'chunk' && i.isFinal), [], 'no final chunk before the stream ended well');
});

test('the final chunk of a stream that ends well comes once, after the stream ended', async (t) => {
  const model = await rawModel(chunk({ role: 'assistant', content: '' }) + chunk({ content: 'whole answer' }) + chunk({}, 'stop') + 'data: [DONE]\n\n');
  t.after(() => model.close());
  const resolved: ResolvedModel = { id: 'm', baseUrl: model.url, apiKey: 'k', modelId: 'm', abilities: [], extraArgs: {}, timeoutMs: 10_000 };
  const items: AgentItem[] = [];
  const outcome = await runLocalAgent(
    {
      v: 1, queryId: '00000000-0000-4000-8000-000000000001', pipelineId: 'p', conversationId: 'c', model: { primary: 'm', fallbacks: [] }, stream: true,
      route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' },
      messages: [{ role: 'user', content: 'hi' }], exceptionHandling: 'show-hint', failureHint: 'Request failed.',
    },
    [resolved],
    { pool: new OpenAIClientPool(), logger: silent, emit: async (item) => void items.push(item) },
  );
  assert.equal(outcome.ok, true);
  const finals = items.filter((i) => i.kind === 'chunk' && i.isFinal);
  assert.equal(finals.length, 1);
  assert.equal(finals[0].kind === 'chunk' && finals[0].text, 'whole answer');
});

test('no model configured: LangBot\'s error text, which show-error passes to the user', async () => {
  const items: AgentItem[] = [];
  const outcome = await runLocalAgent(
    {
      v: 1, queryId: '00000000-0000-4000-8000-000000000002', pipelineId: 'p', conversationId: 'c', model: { primary: 'm', fallbacks: [] }, stream: true,
      route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' },
      messages: [{ role: 'user', content: 'hi' }], exceptionHandling: 'show-error', failureHint: 'Request failed.',
    },
    [],
    { pool: new OpenAIClientPool(), logger: silent, emit: async (item) => void items.push(item) },
  );
  assert.deepEqual(outcome, { ok: false, error: 'No LLM model configured for local-agent runner', userText: 'No LLM model configured for local-agent runner' });
  assert.deepEqual(items, []);
});

test('tool calls streamed without id or index get LangBot\'s call_<index> ids, by their place in the delta', async (t) => {
  const bodies: { messages: { role: string; tool_call_id?: string; tool_calls?: { id: string }[] }[] }[] = [];
  const answers = [
    chunk({ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }, { type: 'function', function: { name: 'g', arguments: '{}' } }] }) + chunk({}, 'tool_calls') + 'data: [DONE]\n\n',
    chunk({ role: 'assistant', content: 'done' }) + chunk({}, 'stop') + 'data: [DONE]\n\n',
  ];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      bodies.push(JSON.parse(raw));
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(answers[bodies.length - 1] ?? answers[1]);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const resolved: ResolvedModel = { id: 'm', baseUrl: url, apiKey: 'k', modelId: 'm', abilities: ['func_call'], extraArgs: {}, timeoutMs: 10_000 };
  const tools = { definitions: () => [], call: async () => 'ok' };
  const outcome = await runLocalAgent(
    {
      v: 1, queryId: '00000000-0000-4000-8000-000000000003', pipelineId: 'p', conversationId: 'c', model: { primary: 'm', fallbacks: [] }, stream: true,
      route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' },
      messages: [{ role: 'user', content: 'hi' }], exceptionHandling: 'show-hint', failureHint: 'Request failed.',
    },
    [resolved],
    { pool: new OpenAIClientPool(), logger: silent, tools, emit: async () => undefined },
  );
  assert.equal(outcome.ok, true);
  const second = bodies[1].messages;
  assert.deepEqual(second.find((m) => m.role === 'assistant')!.tool_calls!.map((c) => c.id), ['call_0', 'call_1']);
  assert.deepEqual(second.filter((m) => m.role === 'tool').map((m) => m.tool_call_id), ['call_0', 'call_1']);
});

test('the chunk that ends a tool round names the tools it calls', async (t) => {
  const model = await rawModel(
    chunk({ role: 'assistant', content: 'Checking.' }) +
      chunk({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'get_weather', arguments: '{}' } }, { index: 1, id: 'b', type: 'function', function: { name: 'search', arguments: '{}' } }] }) +
      chunk({}, 'tool_calls') + 'data: [DONE]\n\n',
  );
  t.after(() => model.close());
  const resolved: ResolvedModel = { id: 'm', baseUrl: model.url, apiKey: 'k', modelId: 'm', abilities: ['func_call'], extraArgs: {}, timeoutMs: 10_000 };
  const items: AgentItem[] = [];
  await runLocalAgent(
    {
      v: 1, queryId: '00000000-0000-4000-8000-000000000004', pipelineId: 'p', conversationId: 'c', model: { primary: 'm', fallbacks: [] }, stream: true,
      route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' },
      messages: [{ role: 'user', content: 'hi' }], exceptionHandling: 'show-hint', failureHint: 'Request failed.',
    },
    [resolved],
    { pool: new OpenAIClientPool(), logger: silent, tools: { definitions: () => [], call: async () => 'ok' }, maxToolRounds: 1, emit: async (item) => void items.push(item) },
  );
  const first = items.find((i) => i.kind === 'chunk' && i.isFinal);
  assert.deepEqual(first, { kind: 'chunk', text: 'Checking.', isFinal: true, hasToolCalls: true, toolNames: ['get_weather', 'search'], sequence: 1 });
});
