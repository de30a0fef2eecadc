import { runService } from '@conveyor/service-kit';
import { GatewayModule } from './gateway.module.js';
import { startGateway } from './gateway.js';
import { GatewayEnv } from './env.js';

await runService({
  name: 'gateway',
  defaultPort: 8085,
  env: GatewayEnv,
  // One read of the enabled bots per reconcile tick.
  databasePoolSize: 2,
  module: () => GatewayModule.register(),
  start: startGateway,
});
