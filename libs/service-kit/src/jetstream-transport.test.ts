import 'reflect-metadata';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Controller, Module, type DynamicModule, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { BusPublisher, ensureStreams, PermanentError, readDeadLetters, RetryableError, type ConsumeContext } from '@conveyor/bus';
import { memoryLogger, streamMessages, testBus, waitFor } from '@conveyor/test-support';
import { JetStreamTransport, RoleHandler, type RoleConsumers } from './jetstream-transport.js';

const Ping = z.object({ n: z.number().int(), then: z.enum(['return', 'retry-once', 'reject', 'wait']) });
type Ping = z.infer<typeof Ping>;

/** What the handler saw, and a gate a `wait` message holds on. */
class Recorder {
  readonly seen: Array<{ n: number; deliveryCount: number; msgId: string | undefined; aborted: boolean }> = [];
  readonly finished: number[] = [];
  release: () => void = () => undefined;
  readonly gate = new Promise<void>((resolve) => (this.release = resolve));
}

@Controller()
class PingConsumer {
  constructor(private readonly recorder: Recorder) {}

  @RoleHandler('orchestrator')
  async handle(@Payload() ping: Ping, @Ctx() ctx: ConsumeContext): Promise<void> {
    this.recorder.seen.push({ n: ping.n, deliveryCount: ctx.deliveryCount, msgId: ctx.msgId, aborted: ctx.signal.aborted });
    if (ping.then === 'retry-once' && ctx.deliveryCount === 1) throw new RetryableError(200);
    if (ping.then === 'reject') throw new PermanentError(`ping ${ping.n} is refused`);
    if (ping.then === 'wait') await this.recorder.gate;
    this.recorder.finished.push(ping.n);
  }
}

@Module({})
class PingModule {
  static register(recorder: Recorder): DynamicModule {
    return { module: PingModule, controllers: [PingConsumer], providers: [{ provide: Recorder, useValue: recorder }] };
  }
}

async function start(t: TestContext, consumers: (schema: typeof Ping) => RoleConsumers = (schema) => ({ orchestrator: { schema, concurrency: 2, prefetch: 2 } })) {
  const bus = await testBus('transport-test');
  const streams = Object.values(bus.topo.streams);
  await ensureStreams(bus.jsm, streams);
  const publisher = new BusPublisher(bus.js, { streams });
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true });
  const logger = memoryLogger();
  const recorder = new Recorder();
  const transport = new JetStreamTransport(
    { topology: bus.topo, js: bus.js, jsm: bus.jsm, publisher, redis, logger, env: { SHUTDOWN_GRACE_SECONDS: 20 } },
    consumers(Ping),
  );
  const app: INestMicroservice = await NestFactory.createMicroservice<MicroserviceOptions>(PingModule.register(recorder), { strategy: transport, logger: false });
  t.after(async () => {
    recorder.release();
    await app.close();
    redis.disconnect();
    await bus.cleanup();
  });
  const subject = bus.topo.subjects.query('bot');
  const dlqSubject = bus.topo.subjects.deadLetter('orchestrator');
  return {
    app,
    transport,
    recorder,
    logger,
    send: (ping: Ping) => publisher.publish(subject, Ping, ping, { msgId: `ping-${ping.n}` }),
    sendRaw: (body: string, msgId: string) => bus.js.publish(subject, body, { msgID: msgId }),
    deadLetters: () => readDeadLetters(bus.js, bus.topo.streams.deadLetters, dlqSubject),
    pending: () => streamMessages(bus.jsm, bus.topo.consumers.orchestrator.stream),
  };
}

test('an @EventPattern handler gets the validated payload and the JetStream context; returning acks the message', async (t) => {
  const s = await start(t);
  await s.app.listen();
  await s.send({ n: 1, then: 'return' });
  await waitFor(() => s.recorder.finished.length === 1, 15_000, 'the handler to run');
  assert.deepEqual(s.recorder.seen, [{ n: 1, deliveryCount: 1, msgId: 'ping-1', aborted: false }]);
  await waitFor(async () => (await s.pending()) === 0, 15_000, 'the ack to empty the work queue');
  assert.deepEqual(await s.deadLetters(), []);
});

test('a payload the role\'s schema refuses goes to the dead letters with the reason, and the handler never sees it', async (t) => {
  const s = await start(t);
  await s.app.listen();
  await s.sendRaw(JSON.stringify({ n: 'two', then: 'return' }), 'raw-2');
  await s.send({ n: 3, then: 'return' });
  await waitFor(async () => (await s.deadLetters()).length === 1, 15_000, 'the dead letter');
  const [letter] = await s.deadLetters();
  assert.equal(letter.reason, 'invalid_payload');
  assert.equal(letter.source, 'orchestrator');
  assert.match(letter.error, /schema validation failed/);
  await waitFor(() => s.recorder.finished.length === 1, 15_000, 'the valid message after it');
  assert.deepEqual(s.recorder.seen.map((x) => x.n), [3]);
});

test('a PermanentError thrown in the handler reaches the loop as itself: one delivery, then a dead letter with its message', async (t) => {
  const s = await start(t);
  await s.app.listen();
  await s.send({ n: 4, then: 'reject' });
  await waitFor(async () => (await s.deadLetters()).length === 1, 15_000, 'the dead letter');
  const [letter] = await s.deadLetters();
  assert.equal(letter.reason, 'handler_rejected');
  assert.match(letter.error, /ping 4 is refused/, 'Nest\'s "Internal server error" must not replace the error');
  assert.equal(s.recorder.seen.length, 1);
  await waitFor(async () => (await s.pending()) === 0, 15_000, 'the message to leave the work queue');
});

test('a RetryableError naks with its delay: the message comes back as delivery 2 and is then acked', async (t) => {
  const s = await start(t);
  await s.app.listen();
  await s.send({ n: 5, then: 'retry-once' });
  await waitFor(() => s.recorder.finished.length === 1, 15_000, 'the redelivery');
  assert.deepEqual(s.recorder.seen.map((x) => x.deliveryCount), [1, 2]);
  await waitFor(async () => (await s.pending()) === 0, 15_000, 'the ack');
  assert.deepEqual(await s.deadLetters(), []);
  assert.deepEqual(s.logger.lines.filter((l) => l.level === 'warn' || l.level === 'error'), [], 'a deferral is no warning');
});

test('closing drains: a handler in flight finishes and is acked before close returns, and nothing is redelivered', async (t) => {
  const s = await start(t);
  await s.app.listen();
  await s.send({ n: 6, then: 'wait' });
  await waitFor(() => s.recorder.seen.length === 1, 15_000, 'the handler to start');
  let closed = false;
  const closing = s.transport.close().then(() => (closed = true));
  await new Promise<void>((resolve) => setImmediate(resolve));
  assert.equal(closed, false, 'close returned while a handler was still held');
  s.recorder.release();
  await closing;
  assert.deepEqual(s.recorder.finished, [6]);
  assert.equal(await s.pending(), 0, 'the drained message was acked');
  assert.equal(s.recorder.seen.length, 1);
  await s.transport.close();
});

test('a consumer without a handler, or a handler for a consumer the service does not run, stops the start with the role named', async (t) => {
  const noHandler = await start(t, (schema) => ({ orchestrator: { schema, concurrency: 1 }, dispatcher: { schema, concurrency: 1 } }));
  await assert.rejects(noHandler.app.listen(), /the dispatcher consumer has no @EventPattern\('dispatcher'\) handler/);
  const noConsumer = await start(t, () => ({}));
  await assert.rejects(noConsumer.app.listen(), /@EventPattern\('orchestrator'\) names no consumer this service runs/);
});
