import type { INestApplication } from '@nestjs/common';
import { RunnerEvent } from '@conveyor/contracts';
import { startRoleConsumer } from '@conveyor/service-kit';
import { EventHandler } from './event.handler.js';
import type { DispatcherInfra } from './env.js';

export async function startEventConsumer(app: INestApplication, infra: DispatcherInfra) {
  const handler = app.get(EventHandler);
  const { env } = infra;
  return startRoleConsumer(infra, {
    role: 'dispatcher',
    schema: RunnerEvent,
    concurrency: env.DISPATCHER_CONCURRENCY,
    prefetch: env.DISPATCHER_CONCURRENCY,
    handler: (event, ctx) => handler.handle(event, ctx),
  });
}
