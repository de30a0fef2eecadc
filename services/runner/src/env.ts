import { z } from 'zod';

export const RunnerEnv = z.object({
  /** Runs this replica executes at once; it pulls no more than this from the shared consumer. */
  RUNNER_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(32),
  /**
   * Overrides the runner consumer's ack wait (default: the topology's 60 s). How long a dead runner's
   * run waits before another replica gets it; heartbeats go out every third of it. Tests shorten it.
   */
  RUNNER_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(3_600_000).optional(),
  /** MCP `tools/call` timeout (LangBot: 300 s; 0 disables it). */
  MCP_TOOL_CALL_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
  /** Knowledge base documents one replica ingests at once. */
  INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** How often a replica publishes the jobs of documents still pending (added by setup, or a lost publish). */
  KNOWLEDGE_SWEEP_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
});
export type RunnerEnv = z.infer<typeof RunnerEnv>;
