import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { OpenAIClientPool } from './client-pool.js';
import { createModelFetch, type FetchFunction } from './model-fetch.js';
import { anthropicProvider } from './providers/anthropic.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const seen: Seen[] = [];
/** Streams whose client went away before the server ended them. */
let streamsCut = 0;
let streamCutSeen: (() => void) | undefined;

const completion = { id: 'chatcmpl-1', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hello' } }] };
// Anthropic's Messages API: a message, and its stream's events.
const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } };
const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    const path = req.url ?? '';
    if (path.startsWith('/plain/')) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req-1' }).end(JSON.stringify(completion));
    } else if (path.startsWith('/gzip/')) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(zlib.gzipSync(JSON.stringify(completion)));
    } else if (path.startsWith('/br-stream/')) {
      // A compressed event stream, flushed per event as a proxy in front of a model may send it.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'br' });
      const br = zlib.createBrotliCompress();
      br.pipe(res);
      for (const word of ['one', ' two', ' three']) {
        br.write(chunk(word));
        br.flush();
      }
      br.end('data: [DONE]\n\n');
    } else if (path.startsWith('/redirect/')) {
      res.writeHead(307, { location: path.replace('/redirect/', '/plain/') }).end();
    } else if (path.startsWith('/slow/')) {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion)), 5_000).unref();
    } else if (path.startsWith('/endless/')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('first'));
      const timer = setInterval(() => res.write(chunk(' more')), 20);
      res.on('close', () => {
        clearInterval(timer);
        if (!res.writableEnded) {
          streamsCut++;
          streamCutSeen?.();
        }
      });
    } else if (path.startsWith('/messages/')) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req-1' }).end(JSON.stringify(message));
    } else if (path.startsWith('/messages-stream/')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 0 } } }));
      res.write(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
      for (const text of ['one', ' two', ' three']) res.write(sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }));
      res.write(sse('content_block_stop', { type: 'content_block_stop', index: 0 }));
      res.write(sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }));
      res.end(sse('message_stop', { type: 'message_stop' }));
    } else if (path.startsWith('/overloaded/')) {
      res.writeHead(529, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    } else if (path.startsWith('/bad-key/')) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'bad key', type: 'invalid_request_error' } }));
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
const client = (prefix: string, opts: { timeout?: number; fetch?: FetchFunction } = {}) =>
  new OpenAI({ baseURL: `${base}/${prefix}/v1`, apiKey: 'sk-test', maxRetries: 0, fetch: opts.fetch ?? fetch, ...(opts.timeout ? { timeout: opts.timeout } : {}) });
const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

test('a completion through the SDK: the request as the SDK built it, the answer parsed, compression asked for', async () => {
  seen.length = 0;
  const answer = await client('plain').chat.completions.create(ask);
  assert.equal(answer.choices[0]?.message.content, 'hello');
  const request = seen[0]!;
  assert.equal(request.method, 'POST');
  assert.equal(request.url, '/plain/v1/chat/completions');
  assert.equal(request.headers.authorization, 'Bearer sk-test');
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['accept-encoding'], 'gzip, deflate, br');
  assert.deepEqual(JSON.parse(request.body), ask);
  const raw = await client('plain').chat.completions.create(ask).asResponse();
  assert.equal(raw.headers.get('x-request-id'), 'req-1');
});

test('compressed answers are decoded, a streamed one as it arrives', async () => {
  assert.equal((await client('gzip').chat.completions.create(ask)).choices[0]?.message.content, 'hello');
  let text = '';
  for await (const part of await client('br-stream').chat.completions.create({ ...ask, stream: true })) text += part.choices[0]?.delta.content ?? '';
  assert.equal(text, 'one two three');
});

test('a redirect is followed with the same method and body', async () => {
  seen.length = 0;
  const answer = await client('redirect').chat.completions.create(ask);
  assert.equal(answer.choices[0]?.message.content, 'hello');
  assert.deepEqual(seen.map((s) => [s.method, s.url]), [['POST', '/redirect/v1/chat/completions'], ['POST', '/plain/v1/chat/completions']]);
  assert.deepEqual(JSON.parse(seen[1]!.body), ask);
});

test('the SDK tells its errors apart as with fetch: HTTP status, timeout, abort, refused connection', async () => {
  await assert.rejects(client('bad-key').chat.completions.create(ask), (err: unknown) => err instanceof OpenAI.AuthenticationError && err.status === 401);
  await assert.rejects(client('slow', { timeout: 200 }).chat.completions.create(ask), OpenAI.APIConnectionTimeoutError);
  const controller = new AbortController();
  const pending = client('slow').chat.completions.create(ask, { signal: controller.signal });
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(pending, OpenAI.APIUserAbortError);
  // A port nothing listens on: taken from a server that is closed again.
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const refused = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0, fetch });
  await assert.rejects(refused.chat.completions.create(ask), (err: unknown) => err instanceof OpenAI.APIConnectionError && !(err instanceof OpenAI.APIConnectionTimeoutError));
});

test('leaving a stream early closes its connection', async () => {
  const cut = new Promise<void>((resolve) => (streamCutSeen = resolve));
  const before = streamsCut;
  const stream = await client('endless').chat.completions.create({ ...ask, stream: true });
  let parts = 0;
  for await (const part of stream) {
    assert.ok(part.choices[0]?.delta.content);
    if (++parts === 3) break;
  }
  await cut;
  assert.equal(streamsCut, before + 1);
});

test('requests it takes no shortcut for (a form body, a Request) go to the fallback fetch', async () => {
  const calls: unknown[] = [];
  const fallback: FetchFunction = async (input) => {
    calls.push(input);
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  };
  const withFallback = createModelFetch(undefined, fallback);
  const form = new FormData();
  form.set('purpose', 'fine-tune');
  await withFallback(`${base}/plain/v1/files`, { method: 'POST', body: form });
  await withFallback(new Request(`${base}/plain/v1/models`));
  assert.equal(calls.length, 2);
  const direct = await withFallback(`${base}/plain/v1/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(calls.length, 2, 'a string body is sent directly');
  assert.equal(((await direct.json()) as typeof completion).id, 'chatcmpl-1');
});

// The Anthropic SDK takes the same fetch: it must see what it sees with Node's (its request, its
// answers, its streams, its errors).
const anthropic = (prefix: string, timeout?: number) => new Anthropic({ baseURL: `${base}/${prefix}`, apiKey: 'sk-ant-test', authToken: null, maxRetries: 0, fetch, ...(timeout ? { timeout } : {}) });
const anthropicAsk = { model: 'claude-test', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] };

test('a message through the Anthropic SDK: the request as the SDK built it, the answer parsed, a stream event by event', async () => {
  seen.length = 0;
  const answer = await anthropic('messages').messages.create(anthropicAsk);
  assert.deepEqual(answer.content, [{ type: 'text', text: 'hello' }]);
  const request = seen[0]!;
  assert.equal(request.url, '/messages/v1/messages');
  // The key in the header this SDK version puts it in (an `Authorization` bearer, or `x-api-key`).
  assert.match(String(request.headers.authorization ?? request.headers['x-api-key']), /sk-ant-test/);
  assert.ok(request.headers['anthropic-version'], 'the SDK names the API version');
  assert.deepEqual(JSON.parse(request.body), anthropicAsk);
  assert.equal((await anthropic('messages').messages.create(anthropicAsk).asResponse()).headers.get('request-id'), 'req-1');
  let text = '';
  for await (const event of await anthropic('messages-stream').messages.create({ ...anthropicAsk, stream: true })) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
  }
  assert.equal(text, 'one two three');
});

test('the Anthropic SDK tells its errors apart as with fetch: HTTP status, timeout, abort', async () => {
  await assert.rejects(anthropic('overloaded').messages.create(anthropicAsk), (err: unknown) => err instanceof Anthropic.APIError && err.status === 529);
  await assert.rejects(anthropic('slow', 200).messages.create(anthropicAsk), Anthropic.APIConnectionTimeoutError);
  const controller = new AbortController();
  const pending = anthropic('slow').messages.create(anthropicAsk, { signal: controller.signal });
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
  const model = { id: 'claude', provider: 'anthropic' as const, baseUrl: `${base}/messages`, apiKey: 'sk-ant-test', modelId: 'claude-test', abilities: [], extraArgs: {}, timeoutMs: 5_000 };
  const answer = await anthropicProvider.complete({ pool, model, messages: [{ role: 'user', content: 'hi' }], removeThink: false });
  assert.equal(answer.message.content, 'hello');
  assert.deepEqual(through, [`${base}/messages/v1/messages`]);
});
