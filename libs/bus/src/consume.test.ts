import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { ConsumerSpec } from '@conveyor/contracts';
import { startConsumer, type ConsumerHandle, type MessageContext, type StartConsumerOptions } from './consume.js';
import { deadLetterPayload, readDeadLetters } from './dead-letter.js';
import { PermanentError, RetryableError } from './errors.js';
import { ensureConsumers, ensureStreams } from './provision.js';
import { BusPublisher } from './publish.js';
import { memoryLogger, sleep, streamMessages, testBus, waitFor } from '@conveyor/test-support';

const Ping = z.object({ v: z.literal(1), n: z.number().int(), text: z.string() });
type Ping = z.infer<typeof Ping>;
type Handler = StartConsumerOptions<typeof Ping>['handler'];

async function setup(t: TestContext, consumer: Partial<ConsumerSpec> = {}) {
  const bus = await testBus();
  const streams = Object.values(bus.topo.streams);
  await ensureStreams(bus.jsm, streams);
  const spec: ConsumerSpec = { ...bus.topo.consumers.orchestrator, ...consumer };
  await ensureConsumers(bus.jsm, [spec]);
  const pub = new BusPublisher(bus.js, { streams });
  const dlqSubject = bus.topo.subjects.deadLetter('orchestrator');
  const logger = memoryLogger();
  const handles: ConsumerHandle[] = [];
  t.after(async () => {
    for (const h of handles) await h.stop({ timeoutMs: 2_000, abortGraceMs: 200 });
    await bus.cleanup();
  });
  const start = async (handler: Handler, extra: Partial<StartConsumerOptions<typeof Ping>> = {}) => {
    const h = await startConsumer({
      js: bus.js,
      spec,
      schema: Ping,
      handler,
      source: 'orchestrator',
      deadLetterSubject: dlqSubject,
      publisherForDeadLetters: pub,
      backoff: () => 50,
      logger,
      ...extra,
    });
    handles.push(h);
    return h;
  };
  const subject = bus.topo.subjects.query('bot');
  const send = (n: number) => pub.publish(subject, Ping, { v: 1, n, text: `msg ${n}` }, { msgId: `m-${n}` });
  const sendRaw = (body: string, msgId: string) => bus.js.publish(subject, body, { msgID: msgId });
  const deadLetters = () => readDeadLetters(bus.js, bus.topo.streams.deadLetters, dlqSubject);
  const pending = () => streamMessages(bus.jsm, spec.stream);
  return { bus, spec, start, send, sendRaw, deadLetters, pending, logger, subject };
}

test('a handler that returns acks its message: the work queue is empty afterwards', async (t) => {
  const s = await setup(t);
  const seen: Array<{ p: Ping; ctx: MessageContext }> = [];
  await s.start((p, ctx) => void seen.push({ p, ctx }));
  await s.send(1);
  await waitFor(() => seen.length === 1, 5_000, 'delivery');
  assert.deepEqual(seen[0].p, { v: 1, n: 1, text: 'msg 1' });
  assert.equal(seen[0].ctx.deliveryCount, 1);
  assert.equal(seen[0].ctx.subject, s.subject);
  assert.equal(seen[0].ctx.msgId, 'm-1');
  assert.equal(seen[0].ctx.durable, s.spec.durable);
  await waitFor(async () => (await s.pending()) === 0, 5_000, 'ack to empty the work queue');
  await sleep(200);
  assert.equal(seen.length, 1, 'acked message must not come back');
});

test('a thrown error naks the message and it is redelivered (deliveryCount 2)', async (t) => {
  const s = await setup(t);
  const counts: number[] = [];
  await s.start((_p, ctx) => {
    counts.push(ctx.deliveryCount);
    if (ctx.deliveryCount === 1) throw new Error('transient');
  });
  await s.send(1);
  await waitFor(() => counts.length === 2, 5_000, 'redelivery');
  assert.deepEqual(counts, [1, 2]);
  await waitFor(async () => (await s.pending()) === 0, 5_000, 'ack after retry');
  assert.ok(s.logger.lines.some((l) => l.level === 'warn' && /nak-ed/.test(l.msg ?? '')));
});

test('RetryableError delays the redelivery: a later message is handled first', async (t) => {
  const s = await setup(t);
  const order: string[] = [];
  let firstAt = 0;
  let retryAt = 0;
  await s.start((p, ctx) => {
    order.push(`${p.n}#${ctx.deliveryCount}`);
    if (p.n === 1 && ctx.deliveryCount === 1) {
      firstAt = Date.now();
      throw new RetryableError(1_500);
    }
    if (p.n === 1) retryAt = Date.now();
  });
  await s.send(1);
  await waitFor(() => order.length === 1, 5_000, 'first delivery');
  await s.send(2);
  await waitFor(() => order.length === 3, 8_000, 'retry');
  assert.deepEqual(order, ['1#1', '2#1', '1#2']);
  assert.ok(retryAt - firstAt >= 1_000, `redelivered after ${retryAt - firstAt} ms, expected about 1500`);
  // A deferral is the normal path (a rate-limit wait, a busy session): no warning, no stack trace.
  assert.deepEqual(s.logger.lines.filter((l) => l.level === 'warn' || l.level === 'error'), []);
  assert.ok(s.logger.lines.some((l) => l.level === 'debug' && l.msg === 'message deferred' && !JSON.stringify(l.obj).includes('stack')));
});

test('a message failing on every delivery goes to the dead letters at max_deliver, with its payload', async (t) => {
  const s = await setup(t, { maxDeliver: 3 });
  let calls = 0;
  await s.start(() => {
    calls++;
    throw new Error(`boom ${calls}`);
  });
  const ack = await s.send(7);
  await waitFor(async () => (await s.deadLetters()).length === 1, 10_000, 'dead letter');
  const [dl] = await s.deadLetters();
  assert.equal(dl.reason, 'max_deliver');
  assert.equal(dl.deliveryCount, 3);
  assert.equal(dl.source, 'orchestrator');
  assert.equal(dl.stream, s.spec.stream);
  assert.equal(dl.subject, s.subject);
  assert.match(dl.error, /boom 3/);
  assert.deepEqual(JSON.parse(deadLetterPayload(dl).toString('utf8')), { v: 1, n: 7, text: 'msg 7' });
  assert.equal(dl.payloadTruncated, false);
  assert.equal(calls, 3);
  await waitFor(async () => (await s.pending()) === 0, 5_000, 'term to remove the message');
  await sleep(300);
  assert.equal(calls, 3, 'terminated message must not come back');
  assert.ok(ack.seq > 0);
});

test('invalid JSON and schema-invalid payloads are dead-lettered on the first delivery; valid ones still flow', async (t) => {
  const s = await setup(t);
  const handled: number[] = [];
  await s.start((p) => void handled.push(p.n));
  await s.sendRaw('{not json', 'raw-1');
  await s.sendRaw(JSON.stringify({ v: 1, n: 'three', text: 4 }), 'raw-2');
  await s.send(3);
  await waitFor(async () => (await s.deadLetters()).length === 2 && handled.length === 1, 10_000, 'dead letters and valid message');
  assert.deepEqual(handled, [3]);
  const dls = await s.deadLetters();
  for (const dl of dls) {
    assert.equal(dl.reason, 'invalid_payload');
    assert.equal(dl.deliveryCount, 1);
  }
  assert.match(dls[0].error, /invalid JSON/);
  assert.equal(deadLetterPayload(dls[0]).toString('utf8'), '{not json');
  assert.match(dls[1].error, /n: .*expected number/i);
  assert.match(dls[1].error, /text: /);
  await waitFor(async () => (await s.pending()) === 0, 5_000, 'work queue empty');
});

test('an oversized payload is dead-lettered as payload_too_large, cut to the dead-letter limit', async (t) => {
  const s = await setup(t);
  let calls = 0;
  await s.start(() => void calls++, { maxPayloadBytes: 70_000 });
  await s.sendRaw(JSON.stringify({ v: 1, n: 1, text: 'x'.repeat(80_000) }), 'big');
  await waitFor(async () => (await s.deadLetters()).length === 1, 10_000, 'dead letter');
  const [dl] = await s.deadLetters();
  assert.equal(dl.reason, 'payload_too_large');
  assert.equal(dl.payloadTruncated, true);
  assert.equal(deadLetterPayload(dl).byteLength, 64 * 1024);
  assert.equal(calls, 0);
});

test('PermanentError dead-letters at once as handler_rejected', async (t) => {
  const s = await setup(t);
  const counts: number[] = [];
  await s.start((_p, ctx) => {
    counts.push(ctx.deliveryCount);
    throw new PermanentError('unknown bot');
  });
  await s.send(1);
  await waitFor(async () => (await s.deadLetters()).length === 1, 10_000, 'dead letter');
  const [dl] = await s.deadLetters();
  assert.equal(dl.reason, 'handler_rejected');
  assert.equal(dl.deliveryCount, 1);
  assert.match(dl.error, /unknown bot/);
  await sleep(300);
  assert.deepEqual(counts, [1]);
});

test('a handler running longer than ack_wait is kept alive by heartbeats and not redelivered', async (t) => {
  const s = await setup(t, { ackWaitMs: 1_000 });
  const counts: number[] = [];
  let done = false;
  const handler: Handler = async (_p, ctx) => {
    counts.push(ctx.deliveryCount);
    await sleep(3_000);
    done = true;
  };
  // Free slots keep pulls outstanding, so an expired ack_wait would show up as a redelivery here.
  await s.start(handler, { concurrency: 2 });
  await s.start(handler, { concurrency: 2 });
  await s.send(1);
  await waitFor(() => done, 8_000, 'long handler');
  await waitFor(async () => (await s.pending()) === 0, 5_000, 'ack');
  await sleep(1_200);
  assert.deepEqual(counts, [1]);
  const ci = await s.bus.jsm.consumers.info(s.spec.stream, s.spec.durable);
  assert.equal(ci.num_redelivered, 0);
});

test('never more than `concurrency` handlers run at once', async (t) => {
  const s = await setup(t);
  let running = 0;
  let peak = 0;
  const handled: number[] = [];
  await s.start(
    async (p) => {
      running++;
      peak = Math.max(peak, running);
      await sleep(150);
      running--;
      handled.push(p.n);
    },
    { concurrency: 3 },
  );
  for (let i = 1; i <= 12; i++) await s.send(i);
  await waitFor(() => handled.length === 12, 10_000, 'all messages');
  assert.equal(peak, 3, `peak concurrency was ${peak}`);
  assert.deepEqual([...handled].sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i + 1));
});

test('stop() waits for in-flight handlers and their acks', async (t) => {
  const s = await setup(t);
  let started = false;
  let finished = false;
  let received: AbortSignal | undefined;
  const h = await s.start(async (_p, ctx) => {
    started = true;
    received = ctx.signal;
    await sleep(1_000);
    finished = true;
  });
  await s.send(1);
  await waitFor(() => started, 5_000, 'handler start');
  const t0 = Date.now();
  await h.stop();
  assert.equal(finished, true, 'stop returned before the handler finished');
  assert.ok(Date.now() - t0 >= 500);
  assert.equal(received?.aborted, false, 'a handler that finishes in time is not aborted');
  assert.equal(await s.pending(), 0, 'the finished message was acked before stop returned');
  assert.equal(h.inFlight, 0);
});

test('stop() aborts handlers that outlive the timeout; their message goes back at once', async (t) => {
  const s = await setup(t);
  const counts: number[] = [];
  const first = await s.start(async (_p, ctx) => {
    counts.push(ctx.deliveryCount);
    await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  });
  await s.send(1);
  await waitFor(() => counts.length === 1, 5_000, 'handler start');
  await first.stop({ timeoutMs: 200, abortGraceMs: 1_000 });
  assert.equal(await s.pending(), 1, 'the aborted message is still in the stream');
  const again: number[] = [];
  await s.start((_p, ctx) => void again.push(ctx.deliveryCount));
  // nak without delay: back well before the 30 s ack_wait
  await waitFor(() => again.length === 1, 3_000, 'redelivery to the next consumer');
  assert.deepEqual(again, [2]);
});
