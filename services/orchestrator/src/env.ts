import { z } from 'zod';
import type { Infra, ServiceEnv } from '@conveyor/service-kit';

export const OrchestratorEnv = z.object({
  /** Queries this replica works on at once. */
  ORCHESTRATOR_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(64),
  /**
   * Overrides the query consumer's ack wait (default: the topology's 30 s): how long the queries a
   * dead orchestrator held wait before another replica gets them; heartbeats go out every third of it.
   */
  ORCHESTRATOR_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(3_600_000).optional(),
  /** LangBot's concurrency.pipeline: queries in flight across the whole cluster. */
  PIPELINE_CONCURRENCY: z.coerce.number().int().min(1).max(100_000).default(20),
  /** Session lease and pipeline slot TTL; the live query refreshes it, a crashed one frees it by expiry. */
  SESSION_LEASE_TTL_MS: z.coerce.number().int().min(1_000).default(300_000),
  /** How long a message stays registered before it may start (see SessionLeases: arrival order across replicas). */
  SESSION_ORDER_SETTLE_MS: z.coerce.number().int().min(0).default(150),
  /** How long a handler waits for its session's turn before handing the message back to the bus. */
  SESSION_WAIT_HOLD_MS: z.coerce.number().int().min(0).default(20_000),
  /** LangBot's sensitive-words.json for the ban-word filter; unset means no ban words. */
  CONVEYOR_BAN_WORDS_FILE: z.string().optional(),
  /** LangBot's `command.enable`: whether a message starting with a command prefix is a command. */
  COMMAND_ENABLE: z.stringbool().default(true),
  /** LangBot's `command.prefix`, comma-separated: what marks a command. */
  COMMAND_PREFIX: z
    .string()
    .default('!,！')
    .transform((value) => value.split(',').map((prefix) => prefix.trim()).filter((prefix) => prefix !== ''))
    .pipe(z.array(z.string()).min(1, 'COMMAND_PREFIX needs at least one prefix (COMMAND_ENABLE=false turns commands off)')),
});
export type OrchestratorEnv = z.infer<typeof OrchestratorEnv>;

/** Each shard of the pipeline cap must admit one query at least. */
export function checkPipelineShards(env: { PIPELINE_CONCURRENCY: number; PIPELINE_SHARDS: number }): void {
  if (env.PIPELINE_SHARDS > env.PIPELINE_CONCURRENCY) {
    throw new Error(`PIPELINE_SHARDS (${env.PIPELINE_SHARDS}) is above PIPELINE_CONCURRENCY (${env.PIPELINE_CONCURRENCY}): every shard of the cap needs one slot at least`);
  }
}


/** The orchestrator's connections and settings, as `runService` builds them from `OrchestratorEnv`. */
export type OrchestratorInfra = Infra<ServiceEnv<typeof OrchestratorEnv>>;
