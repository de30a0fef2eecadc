import { RunnerEvent } from '@conveyor/contracts';
import { runService } from '@conveyor/service-kit';
import { DispatcherModule } from './dispatcher.module.js';
import { DispatcherEnv } from './env.js';

await runService({
  name: 'dispatcher',
  defaultPort: 8083,
  env: DispatcherEnv,
  // Bot rows come from a cache; the query log's failure marks are group-committed.
  databasePoolSize: 5,
  module: () => DispatcherModule.register(),
  consumers: ({ env }) => ({
    dispatcher: { schema: RunnerEvent, concurrency: env.DISPATCHER_CONCURRENCY, prefetch: env.DISPATCHER_CONCURRENCY },
  }),
});
