import type { INestApplication } from '@nestjs/common';
import { RunRequest } from '@conveyor/contracts';
import { ensureConsumers, startConsumer } from '@conveyor/bus';
import { isDependencyOutage, RedisAttemptStore } from '@conveyor/service-kit';
import { RunHandler } from './run.handler.js';
import type { RunnerInfra } from './env.js';
import { startMaxDeliveriesConsumer } from './max-deliveries.js';
import { McpRegistry } from './mcp-registry.js';
import { startIngestConsumer } from './ingest.consumer.js';

/**
 * All replicas pull from the one durable runner consumer. Prefetch 1 with RUNNER_CONCURRENCY slots:
 * a replica asks for a run only when it has a free slot, so the backlog goes to idle replicas.
 */
export async function startRunConsumer(app: INestApplication, infra: RunnerInfra) {
  const handler = app.get(RunHandler);
  const { env } = infra;
  const base = infra.topology.consumers.runner;
  const spec = env.RUNNER_ACK_WAIT_MS ? { ...base, ackWaitMs: env.RUNNER_ACK_WAIT_MS } : base;
  await ensureConsumers(infra.jsm, [spec]);
  const advisories = await startMaxDeliveriesConsumer(infra, spec, handler);
  const stopIngest = await startIngestConsumer(app, infra);
  const consumer = await startConsumer({
    js: infra.js,
    spec,
    schema: RunRequest,
    handler: (run, ctx) => handler.handle(run, ctx),
    source: 'runner',
    deadLetterSubject: infra.topology.subjects.deadLetter('runner'),
    concurrency: env.RUNNER_CONCURRENCY,
    prefetch: 1,
    logger: infra.logger,
    publisherForDeadLetters: infra.publisher,
    isOutage: isDependencyOutage,
    // A run restarted after its runner died links to the attempt that died, across replicas.
    attempts: new RedisAttemptStore(infra.redis, infra.topology.prefix),
  });
  return async () => {
    // Finish what runs inside the grace period (minus a margin to publish and ack); past it the
    // handlers are aborted, nak their runs, and another replica restarts them.
    const graceMs = Math.max(1_000, env.SHUTDOWN_GRACE_SECONDS * 1000 - 3_000);
    await consumer.stop({ timeoutMs: graceMs, abortGraceMs: 1_500 });
    await advisories.stop({ timeoutMs: 2_000, abortGraceMs: 500 });
    await stopIngest();
    await app.get(McpRegistry).close();
    await app.get(RunHandler).close();
  };
}
