import type { INestApplication } from '@nestjs/common';
import type { z } from 'zod';
import { RunRequest } from '@conveyor/contracts';
import { startRoleConsumer, type Infra } from '@conveyor/service-kit';
import { RunHandler } from './run.handler.js';
import type { RunnerEnv } from './env.js';

export async function startRunConsumer(app: INestApplication, infra: Infra) {
  const handler = app.get(RunHandler);
  const env = infra.env as typeof infra.env & z.infer<typeof RunnerEnv>;
  return startRoleConsumer(infra, {
    role: 'runner',
    schema: RunRequest,
    concurrency: env.RUNNER_CONCURRENCY,
    handler: (run, ctx) => handler.handle(run, ctx),
  });
}
