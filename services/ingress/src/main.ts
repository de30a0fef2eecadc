import { runService } from '@conveyor/service-kit';
import { IngressModule } from './ingress.module.js';
import { IngressEnv, webChatAccess } from './env.js';
import { answerClientErrors } from './client-errors.js';
import { BotWebhooks } from './bot-webhooks.js';
import { webhookRouteOf } from './webhook-routes.js';

await runService({
  name: 'ingress',
  defaultPort: 8080,
  env: IngressEnv,
  // Bot rows come from a cache and a burst's misses share one read; only conversation resets write.
  databasePoolSize: 5,
  // BOT_CACHE_SECONDS=0 reads every bot from Postgres (a test deployment editing rows by hand).
  readModel: (env) => ({ botTtlMs: env.BOT_CACHE_SECONDS * 1000 }),
  module: (infra) => IngressModule.register(webChatAccess(infra.env)),
  // Signatures are computed over the exact bytes, so the webhook handlers read the body themselves.
  nestOptions: { bodyParser: false },
  // Every platform's delivery, served without Express's router and Nest's handler chain.
  rawRoutes: (app) => {
    const webhooks = app.get(BotWebhooks);
    return (req, res) => {
      const route = webhookRouteOf(req.method ?? 'GET', req.url ?? '/');
      return route ? webhooks.serve(route, req, res) : undefined;
    };
  },
  start: async (app, infra) => {
    // Attached before the first request can be read (no I/O runs between listen and this call).
    answerClientErrors(app.getHttpServer(), infra.logger);
    return async () => undefined;
  },
});
