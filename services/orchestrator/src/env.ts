import { z } from 'zod';

export const OrchestratorEnv = z.object({
  /** Queries this replica works on at once. */
  ORCHESTRATOR_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(64),
});
