import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind, trace } from '@opentelemetry/api';
import { z } from 'zod';
import { startConsumer } from './consume.js';
import { readDeadLetters } from './dead-letter.js';
import { ensureConsumers, ensureStreams } from './provision.js';
import { BusPublisher } from './publish.js';
import { installTestTracing, testBus, waitFor } from '@conveyor/test-support';

const exporter = installTestTracing();

const Ping = z.object({ v: z.literal(1), n: z.number().int() });

test('trace context crosses the bus: the CONSUMER span is a child of the PRODUCER span', async (t) => {
  const bus = await testBus();
  const streams = Object.values(bus.topo.streams);
  await ensureStreams(bus.jsm, streams);
  const spec = bus.topo.consumers.orchestrator;
  await ensureConsumers(bus.jsm, [spec]);
  const pub = new BusPublisher(bus.js, { streams });
  const dlqSubject = bus.topo.subjects.deadLetter('orchestrator');
  const activeInHandler: string[] = [];
  const h = await startConsumer({
    js: bus.js,
    spec,
    schema: Ping,
    source: 'orchestrator',
    deadLetterSubject: dlqSubject,
    publisherForDeadLetters: pub,
    handler: (_p, ctx) => {
      activeInHandler.push(trace.getActiveSpan()?.spanContext().spanId ?? 'none');
      assert.equal(trace.getActiveSpan(), ctx.span);
    },
  });
  t.after(async () => {
    await h.stop();
    await bus.cleanup();
  });

  const tracer = trace.getTracer('test');
  const parentTraceId = await tracer.startActiveSpan('inbound', async (parent) => {
    await pub.publish(bus.topo.subjects.query('bot'), Ping, { v: 1, n: 1 }, { msgId: 'trace-1', queryId: 'q1' });
    parent.end();
    return parent.spanContext().traceId;
  });
  await waitFor(() => activeInHandler.length === 1, 5_000, 'delivery');
  await waitFor(() => exporter.getFinishedSpans().some((s) => s.kind === SpanKind.CONSUMER), 5_000, 'consumer span');

  const spans = exporter.getFinishedSpans();
  const parent = spans.find((s) => s.name === 'inbound');
  const producer = spans.find((s) => s.kind === SpanKind.PRODUCER);
  const consumer = spans.find((s) => s.kind === SpanKind.CONSUMER);
  assert.ok(parent && producer && consumer);
  // `{messaging.operation.name} {destination}`, the destination being the subject pattern (subjects carry bot ids).
  assert.equal(producer.name, `send ${bus.topo.streams.queries.subjects[0]}`);
  assert.equal(consumer.name, `process ${spec.filterSubject}`);
  assert.equal(producer.spanContext().traceId, parentTraceId);
  assert.equal(producer.parentSpanContext?.spanId, parent.spanContext().spanId);
  assert.equal(consumer.spanContext().traceId, parentTraceId, 'same trace on both sides');
  assert.equal(consumer.parentSpanContext?.spanId, producer.spanContext().spanId, 'consumer is a child of producer');
  assert.equal(consumer.parentSpanContext?.isRemote, true);
  assert.equal(activeInHandler[0], consumer.spanContext().spanId, 'handler runs inside the consumer span');

  assert.equal(producer.attributes['messaging.system'], 'nats');
  assert.equal(producer.attributes['messaging.destination.name'], bus.topo.subjects.query('bot'));
  assert.equal(producer.attributes['messaging.destination.template'], bus.topo.streams.queries.subjects[0]);
  assert.equal(producer.attributes['messaging.operation.type'], 'send');
  assert.equal(producer.attributes['messaging.operation.name'], 'send');
  assert.equal(producer.attributes['messaging.operation'], undefined, 'the deprecated attribute is gone');
  assert.equal(producer.attributes['messaging.message.id'], 'trace-1');
  assert.equal(typeof producer.attributes['messaging.message.body.size'], 'number');
  assert.equal(consumer.attributes['messaging.system'], 'nats');
  assert.equal(consumer.attributes['messaging.destination.name'], bus.topo.subjects.query('bot'));
  assert.equal(consumer.attributes['messaging.destination.template'], spec.filterSubject);
  assert.equal(consumer.attributes['messaging.operation.type'], 'process');
  assert.equal(consumer.attributes['messaging.operation.name'], 'process');
  assert.equal(consumer.attributes['messaging.consumer.group.name'], spec.durable);
  assert.equal(consumer.attributes['messaging.message.body.size'], producer.attributes['messaging.message.body.size']);
  assert.equal(consumer.attributes['messaging.nats.message.delivery_count'], 1);
  assert.equal(consumer.attributes['messaging.message.id'], 'trace-1');
});

test('a dead letter carries the trace id of the message that failed', async (t) => {
  exporter.reset();
  const bus = await testBus();
  const streams = Object.values(bus.topo.streams);
  await ensureStreams(bus.jsm, streams);
  const spec = bus.topo.consumers.orchestrator;
  await ensureConsumers(bus.jsm, [spec]);
  const pub = new BusPublisher(bus.js, { streams });
  const dlqSubject = bus.topo.subjects.deadLetter('orchestrator');
  const h = await startConsumer({
    js: bus.js,
    spec,
    schema: z.object({ v: z.literal(2) }),
    source: 'orchestrator',
    deadLetterSubject: dlqSubject,
    publisherForDeadLetters: pub,
    handler: () => assert.fail('must not be called'),
  });
  t.after(async () => {
    await h.stop();
    await bus.cleanup();
  });
  const traceId = await trace.getTracer('test').startActiveSpan('inbound', async (span) => {
    await pub.publish(bus.topo.subjects.query('bot'), Ping, { v: 1, n: 1 }, { msgId: 'trace-2' });
    span.end();
    return span.spanContext().traceId;
  });
  await waitFor(async () => (await readDeadLetters(bus.js, bus.topo.streams.deadLetters, dlqSubject)).length === 1, 5_000, 'dead letter');
  const [dl] = await readDeadLetters(bus.js, bus.topo.streams.deadLetters, dlqSubject);
  assert.equal(dl.traceId, traceId);
  assert.equal(dl.reason, 'invalid_payload');
  assert.match(dl.error, /v: /);
  const consumer = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(consumer?.status.code, 2, 'consumer span has error status');
  const dlqPublish = exporter.getFinishedSpans().find((s) => s.name === `send ${bus.topo.streams.deadLetters.subjects[0]}`);
  assert.equal(dlqPublish?.parentSpanContext?.spanId, consumer?.spanContext().spanId, 'dead-letter publish is traced under the consumer span');
});
