import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAIClientPool } from './client-pool.js';
import { runLocalAgent } from './agent-loop.js';
import type { ResolvedModel } from './model.js';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A model endpoint answering every request with these bytes: SSE for streamed calls, JSON otherwise. */
async function model(): Promise<{ url: string; close(): Promise<void> }> {
  const sse = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'ok' }) + chunk({}, 'stop') + 'data: [DONE]\n\n';
  const json = JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] });
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const streamed = (JSON.parse(body) as { stream?: boolean }).stream === true;
      res.writeHead(200, { 'Content-Type': streamed ? 'text/event-stream' : 'application/json' });
      res.end(streamed ? sse : json);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

test('runs leave no abort listener on the caller\'s long-lived signal (the SDK never removes the one it adds)', async (t) => {
  const endpoint = await model();
  t.after(() => endpoint.close());
  const resolved: ResolvedModel = { id: 'm', baseUrl: endpoint.url, apiKey: 'k', modelId: 'm', abilities: [], extraArgs: {}, timeoutMs: 10_000 };
  const consumerStop = new AbortController();
  const pool = new OpenAIClientPool();
  for (const stream of [true, false, true]) {
    const outcome = await runLocalAgent(
      {
        v: 1, queryId: '00000000-0000-4000-8000-000000000000', pipelineId: 'p', conversationId: 'c', model: { primary: 'm', fallbacks: [] }, stream,
        route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' },
        messages: [{ role: 'user', content: 'hi' }], exceptionHandling: 'show-hint', failureHint: 'Request failed.',
      },
      [resolved],
      { pool, logger: silent, emit: async () => undefined, signal: consumerStop.signal },
    );
    assert.equal(outcome.ok, true);
  }
  assert.ok(getEventListeners(consumerStop.signal, 'abort').length <= 1, 'at most the one fan-out listener, however many calls ran');
});
