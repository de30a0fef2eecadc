import { z } from 'zod';
import type { Infra, ServiceEnv } from '@conveyor/service-kit';

export const DispatcherEnv = z.object({
  /** Events this replica handles at once (different sessions; one session is always serial). */
  DISPATCHER_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(256),
  /** Must match the orchestrator's: each event of a live query refreshes its session lease by this much. */
  SESSION_LEASE_TTL_MS: z.coerce.number().int().min(1_000).default(300_000),
  /** LangBot's sensitive-words.json for the post ban-word filter; unset means no ban words. */
  CONVEYOR_BAN_WORDS_FILE: z.string().optional(),
});
export type DispatcherEnv = z.infer<typeof DispatcherEnv>;

/** The dispatcher's connections and settings, as `runService` builds them from `DispatcherEnv`. */
export type DispatcherInfra = Infra<ServiceEnv<typeof DispatcherEnv>>;
