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
