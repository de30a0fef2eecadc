import type { INestApplication } from '@nestjs/common';
import { QueryEnvelope } from '@conveyor/contracts';
import { startRoleConsumer, type Infra } from '@conveyor/service-kit';
import { QueryHandler } from './query.handler.js';
import type { z } from 'zod';
import type { OrchestratorEnv } from './env.js';

export async function startQueryConsumer(app: INestApplication, infra: Infra) {
  const handler = app.get(QueryHandler);
  const env = infra.env as typeof infra.env & z.infer<typeof OrchestratorEnv>;
  return startRoleConsumer(infra, {
    role: 'orchestrator',
    schema: QueryEnvelope,
    concurrency: env.ORCHESTRATOR_CONCURRENCY,
    prefetch: env.ORCHESTRATOR_CONCURRENCY,
    handler: (query, ctx) => handler.handle(query, ctx),
  });
}
