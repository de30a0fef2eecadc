import { QueryEnvelope } from '@conveyor/contracts';
import { runService } from '@conveyor/service-kit';
import { OrchestratorModule } from './orchestrator.module.js';
import { OrchestratorEnv } from './env.js';

await runService({
  name: 'orchestrator',
  defaultPort: 8081,
  env: OrchestratorEnv,
  module: () => OrchestratorModule.register(),
  consumers: ({ env }) => ({
    orchestrator: {
      schema: QueryEnvelope,
      concurrency: env.ORCHESTRATOR_CONCURRENCY,
      prefetch: env.ORCHESTRATOR_CONCURRENCY,
      ...(env.ORCHESTRATOR_ACK_WAIT_MS === undefined ? {} : { ackWaitMs: env.ORCHESTRATOR_ACK_WAIT_MS }),
    },
  }),
});
