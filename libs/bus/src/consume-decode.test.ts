import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { ConsumerSpec } from '@conveyor/contracts';
import { startConsumer } from './consume.js';
import { deadLetterPayload, readDeadLetters } from './dead-letter.js';
import { ensureConsumers, ensureStreams } from './provision.js';
import { BusPublisher } from './publish.js';
import { memoryLogger, streamMessages, testBus, waitFor } from '@conveyor/test-support';

/** A recursive schema with no depth bound: zod recurses once per level and overflows the stack on deep input. */
interface Node {
  child?: Node;
}
const NodeSchema: z.ZodType<Node> = z.lazy(() => z.object({ child: NodeSchema.optional() }));

/** Built as text: JSON.stringify recurses too. */
function nestedJson(depth: number): string {
  return `${'{"child":'.repeat(depth)}{}${'}'.repeat(depth)}`;
}

test('a payload whose validation throws is dead-lettered as invalid_payload on its first delivery; valid ones still flow', async (t) => {
  const bus = await testBus();
  const streams = Object.values(bus.topo.streams);
  await ensureStreams(bus.jsm, streams);
  // A short ack wait: a message left unacked would come back within the test's wait.
  const spec: ConsumerSpec = { ...bus.topo.consumers.orchestrator, ackWaitMs: 1_000 };
  await ensureConsumers(bus.jsm, [spec]);
  const publisher = new BusPublisher(bus.js, { streams });
  const dlqSubject = bus.topo.subjects.deadLetter('orchestrator');
  const handled: Node[] = [];
  const consumer = await startConsumer({
    js: bus.js,
    spec,
    schema: NodeSchema,
    handler: (p) => void handled.push(p),
    source: 'orchestrator',
    deadLetterSubject: dlqSubject,
    publisherForDeadLetters: publisher,
    backoff: () => 50,
    logger: memoryLogger(),
  });
  t.after(async () => {
    await consumer.stop({ timeoutMs: 2_000, abortGraceMs: 200 });
    await bus.cleanup();
  });

  const deep = nestedJson(10_000);
  assert.throws(() => NodeSchema.safeParse(JSON.parse(deep)), RangeError, 'the schema itself throws on this payload');
  const subject = bus.topo.subjects.query('bot');
  await bus.js.publish(subject, deep, { msgID: 'deep-1' });
  await bus.js.publish(subject, nestedJson(2), { msgID: 'shallow-1' });

  const deadLetters = () => readDeadLetters(bus.js, bus.topo.streams.deadLetters, dlqSubject);
  await waitFor(async () => (await deadLetters()).length === 1 && handled.length === 1, 10_000, 'a dead letter and the valid message');
  const [dl] = await deadLetters();
  assert.equal(dl.reason, 'invalid_payload');
  assert.equal(dl.deliveryCount, 1);
  assert.match(dl.error, /RangeError/);
  assert.equal(deadLetterPayload(dl).toString('utf8'), deep.slice(0, 64 * 1024));
  assert.deepEqual(handled, [{ child: { child: {} } }]);
  await waitFor(async () => (await streamMessages(bus.jsm, spec.stream)) === 0, 5_000, 'the work queue to be empty');
  const info = await bus.jsm.consumers.info(spec.stream, spec.durable);
  assert.equal(info.num_redelivered, 0, 'nothing was left unacked to come back');
});
