import type { INestApplication } from '@nestjs/common';
import type { z } from 'zod';
import { RunnerEvent } from '@conveyor/contracts';
import { startRoleConsumer, type Infra } from '@conveyor/service-kit';
import { EventHandler } from './event.handler.js';
import type { DispatcherEnv } from './env.js';

export async function startEventConsumer(app: INestApplication, infra: Infra) {
  const handler = app.get(EventHandler);
  const env = infra.env as typeof infra.env & z.infer<typeof DispatcherEnv>;
  return startRoleConsumer(infra, {
    role: 'dispatcher',
    schema: RunnerEvent,
    concurrency: env.DISPATCHER_CONCURRENCY,
    prefetch: env.DISPATCHER_CONCURRENCY,
    handler: (event, ctx) => handler.handle(event, ctx),
  });
}
