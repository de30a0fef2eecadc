import { z } from 'zod';

export const DispatcherEnv = z.object({
  /** Events this replica handles at once (different sessions; one session is always serial). */
  DISPATCHER_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(256),
});
