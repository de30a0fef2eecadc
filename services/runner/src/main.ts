import { IngestJob, RunRequest } from '@conveyor/contracts';
import { runService } from '@conveyor/service-kit';
import { startRunnerBackground } from './background.js';
import { RunnerModule } from './runner.module.js';
import { RunnerEnv } from './env.js';

await runService({
  name: 'runner',
  defaultPort: 8082,
  env: RunnerEnv,
  module: () => RunnerModule.register(),
  consumers: ({ env }) => ({
    runner: {
      schema: RunRequest,
      concurrency: env.RUNNER_CONCURRENCY,
      prefetch: 1,
      handlerLinksAttempts: true,
      ...(env.RUNNER_ACK_WAIT_MS === undefined ? {} : { ackWaitMs: env.RUNNER_ACK_WAIT_MS }),
    },
    ingest: { schema: IngestJob, concurrency: env.INGEST_CONCURRENCY },
  }),
  start: startRunnerBackground,
});
