import { runService } from '@conveyor/service-kit';
import { RunnerModule } from './runner.module.js';
import { startRunConsumer } from './run.consumer.js';
import { RunnerEnv } from './env.js';

await runService({
  name: 'runner',
  defaultPort: 8082,
  env: RunnerEnv,
  module: () => RunnerModule.register(),
  start: startRunConsumer,
});
