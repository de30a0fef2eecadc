import type { z } from 'zod';
import { isDependencyOutage } from './outage.js';
import { ensureConsumers, NO_ATTEMPT_STORE, startConsumer, type BusLogger, type ConsumeContext } from '@conveyor/bus';
import type { Topology } from '@conveyor/contracts';
import type { BaseEnv } from './env.js';
import type { Infra } from './infra.js';

export type Role = keyof Topology['consumers'];

/** What a role consumer needs of the process's connections (a whole Infra satisfies it). */
export type RoleConsumerInfra = Pick<Infra, 'topology' | 'js' | 'jsm' | 'publisher' | 'redis'> & {
  logger: BusLogger;
  env: Pick<BaseEnv, 'SHUTDOWN_GRACE_SECONDS'>;
};

export interface RoleConsumerOptions<S extends z.ZodType> {
  role: Role;
  schema: S;
  concurrency: number;
  /**
   * Messages pulled ahead of a free handler slot. Short handlers want a deep prefetch for throughput;
   * long ones (runs) want 1 so no message sits here while its ack timer runs.
   */
  prefetch?: number;
  handler: (payload: z.infer<S>, ctx: ConsumeContext) => Promise<void>;
  /**
   * The handler links a redelivered message's span to its earlier attempt itself, on any replica
   * (the runner keeps the span with its attempt number); the consumer keeps no attempts then. Short
   * hops leave it to the consumer, which links attempts that ran in its own process.
   */
  handlerLinksAttempts?: boolean;
  /** The consumer's ack wait instead of the topology's (runs that may go long between heartbeats). */
  ackWaitMs?: number;
}

/**
 * Provisions the role's durable consumer and runs the handler on it; messages the handler cannot take
 * go to the dead letters under the role's name. Returns the graceful stop for shutdown.
 */
export async function startRoleConsumer<S extends z.ZodType>(infra: RoleConsumerInfra, opts: RoleConsumerOptions<S>): Promise<() => Promise<void>> {
  const base = infra.topology.consumers[opts.role];
  const spec = opts.ackWaitMs === undefined ? base : { ...base, ackWaitMs: opts.ackWaitMs };
  await ensureConsumers(infra.jsm, [spec]);
  const consumer = await startConsumer({
    js: infra.js,
    spec,
    schema: opts.schema,
    handler: opts.handler,
    source: opts.role,
    deadLetterSubject: infra.topology.subjects.deadLetter(opts.role),
    concurrency: opts.concurrency,
    prefetch: opts.prefetch ?? 1,
    logger: infra.logger,
    publisherForDeadLetters: infra.publisher,
    isOutage: isDependencyOutage,
    ...(opts.handlerLinksAttempts ? { attempts: NO_ATTEMPT_STORE } : {}),
  });
  // Inside SHUTDOWN_GRACE_SECONDS: wait for running handlers, then abort the rest so they nak at once
  // (another replica takes them now instead of after ack_wait), leaving time to flush acks and exit.
  const graceMs = infra.env.SHUTDOWN_GRACE_SECONDS * 1000;
  const abortGraceMs = Math.min(2_000, graceMs / 4);
  const timeoutMs = Math.max(0, graceMs - abortGraceMs - Math.min(3_000, graceMs / 4));
  return () => consumer.stop({ timeoutMs, abortGraceMs });
}
