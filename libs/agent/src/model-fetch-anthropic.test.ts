import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { OpenAIClientPool } from './client-pool.js';
import { createModelFetch, type FetchFunction } from './model-fetch.js';
import { anthropicProvider } from './providers/anthropic.js';

// The model fetch through the Anthropic SDK, against a local server speaking the Messages API: the
// SDK must see what it sees with fetch (its request, its answers, its streams, its errors).

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const seen: Seen[] = [];

const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } };
const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    seen.push({ url: req.url ?? '', headers: req.headers, body });
    const path = req.url ?? '';
    if (path.startsWith('/plain/')) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req-1' }).end(JSON.stringify(message));
    } else if (path.startsWith('/stream/')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 0 } } }));
      res.write(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
      for (const text of ['one', ' two', ' three']) res.write(sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }));
      res.write(sse('content_block_stop', { type: 'content_block_stop', index: 0 }));
      res.write(sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }));
      res.end(sse('message_stop', { type: 'message_stop' }));
    } else if (path.startsWith('/overloaded/')) {
      res.writeHead(529, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    } else if (path.startsWith('/slow/')) {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message)), 5_000).unref();
    } else {
      res.writeHead(404).end();
    }
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => {
  server.closeAllConnections();
  server.close();
});

const fetch = createModelFetch();
const client = (prefix: string, timeout?: number) => new Anthropic({ baseURL: `${base}/${prefix}`, apiKey: 'sk-ant-test', authToken: null, maxRetries: 0, fetch, ...(timeout ? { timeout } : {}) });
const ask = { model: 'claude-test', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] };

test('a message through the Anthropic SDK: the request as the SDK built it, the answer parsed', async () => {
  seen.length = 0;
  const answer = await client('plain').messages.create(ask);
  assert.deepEqual(answer.content, [{ type: 'text', text: 'hello' }]);
  const request = seen[0]!;
  assert.equal(request.url, '/plain/v1/messages');
  // The key in the header this SDK version puts it in (an `Authorization` bearer, or `x-api-key`).
  assert.match(String(request.headers.authorization ?? request.headers['x-api-key']), /sk-ant-test/);
  assert.ok(request.headers['anthropic-version'], 'the SDK names the API version');
  assert.deepEqual(JSON.parse(request.body), ask);
  const raw = await client('plain').messages.create(ask).asResponse();
  assert.equal(raw.headers.get('request-id'), 'req-1');
});

test('a streamed message arrives event by event', async () => {
  let text = '';
  for await (const event of await client('stream').messages.create({ ...ask, stream: true })) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
  }
  assert.equal(text, 'one two three');
});

test('the Anthropic SDK tells its errors apart as with fetch: HTTP status, timeout, abort', async () => {
  await assert.rejects(client('overloaded').messages.create(ask), (err: unknown) => err instanceof Anthropic.APIError && err.status === 529);
  await assert.rejects(client('slow', 200).messages.create(ask), Anthropic.APIConnectionTimeoutError);
  const controller = new AbortController();
  const pending = client('slow').messages.create(ask, { signal: controller.signal });
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(pending, Anthropic.APIUserAbortError);
});

test('the Anthropic provider sends its requests through its pool\'s fetch', async () => {
  const through: string[] = [];
  const counting: FetchFunction = (input, init) => {
    through.push(String(input));
    return fetch(input, init);
  };
  const pool = new OpenAIClientPool(4, counting);
  const model = { id: 'claude', provider: 'anthropic' as const, baseUrl: `${base}/plain`, apiKey: 'sk-ant-test', modelId: 'claude-test', abilities: [], extraArgs: {}, timeoutMs: 5_000 };
  const answer = await anthropicProvider.complete({ pool, model, messages: [{ role: 'user', content: 'hi' }], removeThink: false });
  assert.equal(answer.message.content, 'hello');
  assert.deepEqual(through, [`${base}/plain/v1/messages`]);
});
