import { runService } from '@conveyor/service-kit';
import { OrchestratorModule } from './orchestrator.module.js';
import { startQueryConsumer } from './query.consumer.js';
import { OrchestratorEnv } from './env.js';

await runService({
  name: 'orchestrator',
  defaultPort: 8081,
  env: OrchestratorEnv,
  module: () => OrchestratorModule.register(),
  start: startQueryConsumer,
});
