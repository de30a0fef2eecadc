import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { context, trace, SpanKind } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { callbackBody, deliverCallback } from '@conveyor/http-bot';
import { startCallbackReceiver, startFakeOpenAI, startOtlpReceiver } from './index.js';

test('openai SDK: non-streaming completion with the default echo and a scripted tool call', async () => {
  const fake = await startFakeOpenAI({ apiKey: 'sk-test' });
  try {
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'sk-test', maxRetries: 0 });
    const r = await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'ping' }] });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, 'gpt-x');
    assert.equal(r.choices[0].message.content, 'Echo: ping');
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(r.usage && r.usage.total_tokens > 0);

    fake.script({ toolCalls: [{ name: 'lookup', arguments: '{"q":"order 42"}' }] });
    const t = await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'where' }] });
    assert.equal(t.choices[0].finish_reason, 'tool_calls');
    const call = t.choices[0].message.tool_calls?.[0];
    assert.ok(call && call.type === 'function');
    assert.equal(call.function.name, 'lookup');
    assert.equal(call.function.arguments, '{"q":"order 42"}');

    assert.equal(fake.requests.length, 2);
    assert.equal(fake.requests[0].headers.authorization, 'Bearer sk-test');
    assert.deepEqual(fake.requests[1].body.messages, [{ role: 'user', content: 'where' }]);

    const bad = new OpenAI({ baseURL: fake.url, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: 'm', messages: [] }), (e: unknown) => e instanceof OpenAI.APIError && e.status === 401);
  } finally {
    await fake.close();
  }
});

test('openai SDK: streamed text arrives in several deltas and reassembles, with usage', async () => {
  const fake = await startFakeOpenAI();
  try {
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'k', maxRetries: 0 });
    fake.script({ text: 'Hello there, how can I help?', chunkSize: 5 });
    const stream = client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].message.content, 'Hello there, how can I help?');
    assert.equal(final.choices[0].message.role, 'assistant');
    assert.equal(final.choices[0].finish_reason, 'stop');
    assert.ok(deltas.length >= 5, `deltas: ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(''), 'Hello there, how can I help?');
    assert.ok(final.usage && final.usage.completion_tokens > 0);
  } finally {
    await fake.close();
  }
});

test('openai SDK: streamed tool call with arguments split across chunks', async () => {
  const fake = await startFakeOpenAI();
  try {
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'k', maxRetries: 0 });
    const args = '{"city":"Paris","days":3,"units":"metric"}';
    fake.script((body, n) => {
      assert.equal(n, 1);
      assert.equal(body.stream, true);
      return { text: 'Checking', toolCalls: [{ name: 'weather', arguments: args }, { name: 'clock', arguments: '{}' }], chunkSize: 6 };
    });
    const stream = client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [
        { type: 'function', function: { name: 'weather', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'clock', parameters: { type: 'object' } } },
      ],
    });
    const argDeltas: string[] = [];
    stream.on('tool_calls.function.arguments.delta', (e) => argDeltas.push(e.arguments_delta));
    const final = await stream.finalChatCompletion();
    const msg = final.choices[0].message;
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.equal(msg.content, 'Checking');
    assert.equal(msg.tool_calls?.length, 2);
    const [weather, clock] = msg.tool_calls!;
    assert.ok(weather.type === 'function' && clock.type === 'function');
    assert.equal(weather.function.name, 'weather');
    assert.equal(weather.function.arguments, args);
    assert.equal(weather.id, 'call_1_0');
    assert.equal(clock.function.name, 'clock');
    assert.equal(clock.function.arguments, '{}');
    assert.ok(argDeltas.length >= Math.ceil(args.length / 6), `argument deltas: ${argDeltas.length}`);
  } finally {
    await fake.close();
  }
});

test('openai SDK: per-delta write times, streams on the shared ticker held open until release, requests in flight', async () => {
  const fake = await startFakeOpenAI();
  try {
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'k', maxRetries: 0 });
    const paced: number[] = [];
    fake.script({ text: 'a b c', tokensPerSecond: 200, onDelta: (i) => paced.push(i) });
    const first = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true });
    let text = '';
    for await (const c of first) text += c.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'a b c');
    assert.deepEqual(paced, [1, 2, 3]);

    const ticks: number[][] = [[], []];
    fake.script(...[0, 1].map((k) => ({ text: 'p q', tickMs: 40, holdOpen: true, onDelta: (i: number) => void ticks[k].push(i) })));
    const streams = await Promise.all([0, 1].map(() => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'y' }], stream: true, stream_options: { include_usage: true } })));
    const read = streams.map(async (s) => {
      let t = '';
      let finish: string | null = null;
      for await (const c of s) {
        t += c.choices[0]?.delta?.content ?? '';
        finish ??= c.choices[0]?.finish_reason ?? null;
      }
      return { t, finish };
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(fake.inFlight, 2, 'both streams held open after their text');
    assert.deepEqual(ticks, [[1, 2], [1, 2]]);
    fake.release();
    assert.deepEqual(await Promise.all(read), [{ t: 'p q', finish: 'stop' }, { t: 'p q', finish: 'stop' }]);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(fake.inFlight, 0);
  } finally {
    await fake.close();
  }
});

test('scripted errors, dropped streams and the default echo', async () => {
  const fake = await startFakeOpenAI();
  try {
    const client = new OpenAI({ baseURL: fake.url, apiKey: 'k', maxRetries: 0 });
    fake.script({ error: { status: 429, message: 'slow down', type: 'rate_limit_error' } }, { text: 'a b c d e f', dropAfterChunks: 3 });
    await assert.rejects(
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 429 && /slow down/.test(e.message),
    );
    const seen: string[] = [];
    await assert.rejects(async () => {
      const s = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true });
      for await (const chunk of s) seen.push(chunk.choices[0]?.delta?.content ?? '');
    });
    assert.ok(seen.length >= 1 && seen.length <= 3, `chunks before the drop: ${seen.length}`);
    const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'parts' }] }] });
    assert.equal(r.choices[0].message.content, 'Echo: parts');
    const models = await client.models.list();
    assert.equal(models.data[0].id, 'fake-model');
  } finally {
    await fake.close();
  }
});

test('callback receiver verifies signatures over the raw bytes', async () => {
  const rx = await startCallbackReceiver({ secret: 'out-secret', respond: (n) => (n === 1 ? 500 : 200) });
  try {
    const body = callbackBody({ sessionId: 's1', replyTo: 'in_x', sequence: 1, isFinal: true, stream: false, message: [{ type: 'Plain', text: 'héllo' }], timestamp: new Date() });
    const result = await deliverCallback({ url: rx.url, body, secret: 'out-secret', maxRetries: 2, sleep: async () => {} });
    assert.deepEqual(result, { delivered: true, attempts: 2, lastStatus: 200 });
    const [first, second] = await rx.waitFor((r) => r.length === 2, 2000);
    assert.equal(first.status, 500);
    assert.equal(second.status, 200);
    assert.ok(second.signatureValid);
    assert.equal(second.json.message[0].text, 'héllo');
    assert.equal(second.rawBody.toString('utf8'), body);

    await deliverCallback({ url: rx.url, body, secret: 'wrong', maxRetries: 0 });
    const all = await rx.waitFor((r) => r.length === 3, 2000);
    assert.equal(all[2].signatureValid, false);
    assert.equal(all[2].signatureFailure, 'signature_mismatch');
    await assert.rejects(rx.waitFor((r) => r.length === 99, 50), /timed out/);
  } finally {
    await rx.close();
  }
});

test('OTLP receiver flattens what the real OTLP/HTTP JSON exporter sends', async () => {
  const rx = await startOtlpReceiver();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'fake-test' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${rx.url}/v1/traces` }))],
  });
  try {
    const tracer = provider.getTracer('fakes-test');
    const parentSpan = tracer.startSpan('parent', {
      kind: SpanKind.PRODUCER,
      attributes: { 'a.str': 'x', 'a.int': 7, 'a.bool': true, 'a.list': ['p', 'q'] },
    });
    tracer.startSpan('child', { kind: SpanKind.CONSUMER }, trace.setSpan(context.active(), parentSpan)).end();
    parentSpan.end();
    await provider.forceFlush();
    const spans = await rx.waitFor((s) => s.length >= 2, 5000);
    const parent = spans.find((s) => s.name === 'parent')!;
    const child = spans.find((s) => s.name === 'child')!;
    assert.match(parent.traceId, /^[0-9a-f]{32}$/);
    assert.match(parent.spanId, /^[0-9a-f]{16}$/);
    assert.equal(parent.parentSpanId, undefined);
    assert.equal(child.parentSpanId, parent.spanId);
    assert.equal(child.traceId, parent.traceId);
    assert.equal(parent.kindName, 'PRODUCER');
    assert.equal(child.kindName, 'CONSUMER');
    assert.equal(parent.serviceName, 'fake-test');
    assert.deepEqual(parent.attributes, { 'a.str': 'x', 'a.int': 7, 'a.bool': true, 'a.list': ['p', 'q'] });

    const proto = await fetch(`${rx.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array([1]) });
    assert.equal(proto.status, 415);
  } finally {
    await provider.shutdown();
    await rx.close();
  }
});
