import { z } from 'zod';

export const RunnerEnv = z.object({
  /** Runs this replica executes at once; it pulls no more than this from the shared consumer. */
  RUNNER_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(32),
});
