import { z } from 'zod';
import type { Infra, ServiceEnv } from '@conveyor/service-kit';
import { MIN_BEARER_TOKEN_CHARS } from '@conveyor/service-kit';

/** An empty value counts as unset, as compose's `${NAME:-}` and an empty Secret key hand it over. */
const unsetWhenEmpty = (value: unknown) => (value === '' ? undefined : value);

export const IngressEnv = z
  .object({
    /**
     * Seconds a bot's configuration is cached at most. A change drops it at once (`ConfigChanged`);
     * this only bounds staleness if an event is lost.
     */
    BOT_CACHE_SECONDS: z.coerce.number().min(0).max(3600).default(300),
    /**
     * Serve the web chat playground at `/chat`. It can talk to every bot, so it is off unless switched
     * on, and then needs WEBCHAT_TOKEN; off, every `/chat` route is 404.
     */
    WEBCHAT_ENABLED: z.preprocess(unsetWhenEmpty, z.stringbool().default(false)),
    /** The shared secret the web chat's API calls carry as `Authorization: Bearer <token>`. */
    WEBCHAT_TOKEN: z.preprocess(unsetWhenEmpty, z.string().min(MIN_BEARER_TOKEN_CHARS, `WEBCHAT_TOKEN needs at least ${MIN_BEARER_TOKEN_CHARS} characters`).optional()),
  })
  .superRefine((env, ctx) => {
    if (env.WEBCHAT_ENABLED && env.WEBCHAT_TOKEN === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['WEBCHAT_TOKEN'],
        message: 'WEBCHAT_TOKEN is required when WEBCHAT_ENABLED is true (a random secret, e.g. `openssl rand -base64 32`)',
      });
    }
  });
export type IngressEnv = z.infer<typeof IngressEnv>;

/** The web chat's settings: off, or on with the token its API calls must carry. */
export type WebChatAccess = { enabled: false } | { enabled: true; token: string };

export function webChatAccess(env: IngressEnv): WebChatAccess {
  return env.WEBCHAT_ENABLED && env.WEBCHAT_TOKEN !== undefined ? { enabled: true, token: env.WEBCHAT_TOKEN } : { enabled: false };
}

/** The ingress's connections and settings, as `runService` builds them from `IngressEnv`. */
export type IngressInfra = Infra<ServiceEnv<typeof IngressEnv>>;
