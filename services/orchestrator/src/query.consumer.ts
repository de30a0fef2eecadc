import type { INestApplication } from '@nestjs/common';
import { QueryEnvelope } from '@conveyor/contracts';
import { startRoleConsumer } from '@conveyor/service-kit';
import { QueryHandler } from './query.handler.js';
import type { OrchestratorInfra } from './env.js';

export async function startQueryConsumer(app: INestApplication, infra: OrchestratorInfra) {
  const handler = app.get(QueryHandler);
  const { env } = infra;
  return startRoleConsumer(infra, {
    role: 'orchestrator',
    schema: QueryEnvelope,
    concurrency: env.ORCHESTRATOR_CONCURRENCY,
    prefetch: env.ORCHESTRATOR_CONCURRENCY,
    handler: (query, ctx) => handler.handle(query, ctx),
  });
}
