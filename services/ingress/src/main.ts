import { runService } from '@conveyor/service-kit';
import { IngressModule } from './ingress.module.js';
import { IngressEnv, webChatAccess } from './env.js';
import { answerClientErrors } from './client-errors.js';

await runService({
  name: 'ingress',
  defaultPort: 8080,
  env: IngressEnv,
  // Bot rows come from a cache and a burst's misses share one read; only conversation resets write.
  databasePoolSize: 5,
  // BOT_CACHE_SECONDS=0 reads every bot from Postgres (a test deployment editing rows by hand).
  readModel: (env) => ({ botTtlMs: env.BOT_CACHE_SECONDS * 1000 }),
  module: (infra) => IngressModule.register(webChatAccess(infra.env)),
  // Signatures are computed over the exact bytes, so the controller reads the body itself.
  nestOptions: { bodyParser: false },
  start: async (app, infra) => {
    // Attached before the first request can be read (no I/O runs between listen and this call).
    answerClientErrors(app.getHttpServer(), infra.logger);
    return async () => undefined;
  },
});
