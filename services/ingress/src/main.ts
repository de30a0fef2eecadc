import { runService, type BaseEnv } from '@conveyor/service-kit';
import { IngressModule } from './ingress.module.js';
import { IngressEnv, webChatAccess } from './env.js';

await runService<BaseEnv & IngressEnv>({
  name: 'ingress',
  defaultPort: 8080,
  env: IngressEnv,
  module: (infra) => IngressModule.register(webChatAccess(infra.env)),
  // Signatures are computed over the exact bytes, so the controller reads the body itself.
  nestOptions: { bodyParser: false },
});
