import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { context, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type SpanContext } from '@opentelemetry/api';
import { z } from 'zod';
import type { AttemptStore } from './attempt-store.js';
import { startConsumer } from './consume.js';
import { RetryableError } from './errors.js';
import { ensureConsumers, ensureStreams } from './provision.js';
import { BusPublisher } from './publish.js';
import { installTestTracing, testBus, waitFor } from '@conveyor/test-support';

const exporter = installTestTracing();

const Ping = z.object({ v: z.literal(1), n: z.number().int() });

/** The orchestrator's consumer on a bus of its own, with this test's handler (and attempt store); stopped after the test. */
async function pingConsumer(t: TestContext, o: { handler: () => void; attempts?: AttemptStore }) {
  const bus = await testBus();
  const streams = Object.values(bus.topo.streams);
  await ensureStreams(bus.jsm, streams);
  const spec = bus.topo.consumers.orchestrator;
  await ensureConsumers(bus.jsm, [spec]);
  const pub = new BusPublisher(bus.js, { streams });
  const consumer = await startConsumer({
    js: bus.js,
    spec,
    schema: Ping,
    source: 'orchestrator',
    deadLetterSubject: bus.topo.subjects.deadLetter('orchestrator'),
    publisherForDeadLetters: pub,
    ...(o.attempts ? { attempts: o.attempts } : {}),
    handler: o.handler,
  });
  t.after(async () => {
    await consumer.stop();
    await bus.cleanup();
  });
  return { bus, pub, consumer };
}

test('a redelivered message links its CONSUMER span to the earlier attempt, in the same trace', async (t) => {
  let attempts = 0;
  const { bus, pub } = await pingConsumer(t, {
    handler: () => {
      if (++attempts === 1) throw new RetryableError(0, 'first attempt fails');
    },
  });

  await pub.publish(bus.topo.subjects.query('bot'), Ping, { v: 1, n: 1 }, { msgId: 'link-1' });
  await waitFor(() => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER).length === 2, 10_000, 'two attempts');

  const [first, second] = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(first.attributes['messaging.nats.message.delivery_count'], 1);
  assert.equal(second.attributes['messaging.nats.message.delivery_count'], 2);
  assert.equal(first.links.length, 0);
  assert.equal(second.links.length, 1);
  assert.equal(second.links[0].context.spanId, first.spanContext().spanId);
  assert.equal(second.links[0].attributes?.['conveyor.link.type'], 'previous_attempt');
  assert.equal(second.spanContext().traceId, first.spanContext().traceId, 'both attempts belong to the message trace');
});

test('only sampled attempts are recorded: a link to a span no one kept would lead nowhere', async (t) => {
  const calls: string[] = [];
  const attempts: AttemptStore = {
    remember: (key: string, span: SpanContext) => void calls.push(`remember ${span.traceFlags}`),
    recall: async () => undefined,
    forget: () => void calls.push('forget'),
  };
  let handled = 0;
  const { bus, pub, consumer } = await pingConsumer(t, { attempts, handler: () => void handled++ });

  // A message whose trace the sampler dropped upstream (traceparent flags 00), then one it kept.
  const unsampled = trace.setSpanContext(ROOT_CONTEXT, { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: TraceFlags.NONE, isRemote: true });
  await context.with(unsampled, () => pub.publish(bus.topo.subjects.query('bot'), Ping, { v: 1, n: 1 }, { msgId: 'sampling-1' }));
  await pub.publish(bus.topo.subjects.query('bot'), Ping, { v: 1, n: 2 }, { msgId: 'sampling-2' });
  await waitFor(() => handled === 2, 10_000, 'both handled');
  await consumer.stop(); // lets both finish
  assert.deepEqual(calls, [`remember ${TraceFlags.SAMPLED}`, 'forget']);
});
