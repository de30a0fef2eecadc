import { z } from 'zod';

export const IngressEnv = z.object({
  /** Seconds a bot's configuration is cached before it is read again from Postgres. */
  BOT_CACHE_SECONDS: z.coerce.number().min(0).max(3600).default(5),
});
