import { runService } from '@conveyor/service-kit';
import { IngressModule } from './ingress.module.js';
import { IngressEnv } from './env.js';

await runService({
  name: 'ingress',
  defaultPort: 8080,
  env: IngressEnv,
  module: () => IngressModule.register(),
  // Signatures are computed over the exact bytes, so the controller reads the body itself.
  nestOptions: { bodyParser: false },
});
