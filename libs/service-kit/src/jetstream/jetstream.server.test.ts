import 'reflect-metadata';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Controller, Module, UseFilters } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import { z } from 'zod';
import { topology } from '@conveyor/contracts';
import { BusPublisher, PermanentError, readDeadLetters } from '@conveyor/bus';
import { randomPrefix, streamMessages, testBus, waitFor, sleep } from '@conveyor/bus/testing';
import { JetStreamContext } from './jetstream.context.js';
import { JetStreamExceptionFilter } from './jetstream-exception.filter.js';
import { JetStreamServer } from './jetstream.server.js';

const topo = topology(randomPrefix());
const spec = topo.consumers.orchestrator;
const Job = z.object({ v: z.literal(1), n: z.number().int(), mode: z.enum(['ok', 'reject', 'flaky']) });
type Job = z.infer<typeof Job>;

const seen: Array<{ job: Job; deliveryCount: number; isContext: boolean }> = [];

@Controller()
@UseFilters(JetStreamExceptionFilter)
class JobController {
  @EventPattern<string>(spec.durable)
  async handle(@Payload() job: Job, @Ctx() ctx: JetStreamContext): Promise<void> {
    seen.push({ job, deliveryCount: ctx.getDeliveryCount(), isContext: ctx instanceof JetStreamContext });
    if (job.mode === 'reject') throw new PermanentError(`job ${job.n} rejected`);
    if (job.mode === 'flaky' && ctx.getDeliveryCount() === 1) throw new Error('flaky');
  }
}

@Module({ controllers: [JobController] })
class JobModule {}

test('JetStreamServer provisions, dispatches validated payloads to @EventPattern(durable), and stops on close', async (t) => {
  const bus = await testBus('nest-test', topo.prefix);
  const publisher = new BusPublisher(bus.js, { streams: Object.values(topo.streams) });
  const server = new JetStreamServer({
    js: bus.js,
    jsm: bus.jsm,
    publisher,
    deadLetterSubject: topo.subjects.deadLetter,
    streams: Object.values(topo.streams),
    bindings: { [spec.durable]: { spec, schema: Job, concurrency: 2, source: 'orchestrator', backoff: () => 50 } },
  });
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(JobModule, { strategy: server, logger: false });
  let closed = false;
  t.after(async () => {
    if (!closed) await app.close();
    await bus.cleanup();
  });
  await app.listen();

  const ci = await bus.jsm.consumers.info(spec.stream, spec.durable);
  assert.equal(ci.config.durable_name, spec.durable, 'listen provisioned the consumer');

  const subject = topo.subjects.query('bot');
  const send = (job: Job) => publisher.publish(subject, Job, job, { msgId: `job-${job.n}` });
  await send({ v: 1, n: 1, mode: 'ok' });
  await send({ v: 1, n: 2, mode: 'reject' });
  await send({ v: 1, n: 3, mode: 'flaky' });
  await bus.js.publish(subject, JSON.stringify({ v: 1, n: 'four', mode: 'ok' }), { msgID: 'job-4' });

  const dlqSubject = topo.subjects.deadLetter('orchestrator');
  await waitFor(async () => (await readDeadLetters(bus.js, topo.streams.deadLetters, dlqSubject)).length === 2, 10_000, 'dead letters');
  await waitFor(() => seen.filter((s) => s.job.n === 3).length === 2, 10_000, 'flaky job retried');
  await waitFor(async () => (await streamMessages(bus.jsm, spec.stream)) === 0, 5_000, 'work queue empty');

  assert.ok(seen.every((s) => s.isContext), 'handlers get a JetStreamContext');
  assert.deepEqual(seen.find((s) => s.job.n === 1), { job: { v: 1, n: 1, mode: 'ok' }, deliveryCount: 1, isContext: true });
  assert.deepEqual(seen.filter((s) => s.job.n === 3).map((s) => s.deliveryCount), [1, 2]);
  assert.equal(seen.filter((s) => s.job.n === 2).length, 1, 'a rejected job is not retried');
  assert.equal(seen.some((s) => s.job.n === 4), false, 'an invalid payload never reaches the handler');

  const dls = await readDeadLetters(bus.js, topo.streams.deadLetters, dlqSubject);
  const byReason = Object.fromEntries(dls.map((d) => [d.reason, d]));
  assert.match(byReason.handler_rejected?.error ?? '', /job 2 rejected/);
  assert.match(byReason.invalid_payload?.error ?? '', /n: /);

  await app.close();
  closed = true;
  const before = seen.length;
  await send({ v: 1, n: 5, mode: 'ok' });
  await sleep(500);
  assert.equal(seen.length, before, 'no message is handled after close');
  assert.equal(await streamMessages(bus.jsm, spec.stream), 1, 'the message waits for the next replica');
});
