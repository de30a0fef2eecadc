import type { Redis } from 'ioredis';
import { redisKeys, type ChatRef, type RedisKeys } from '@conveyor/contracts';
import { loadScripts } from '@conveyor/redis-scripts';

const scripts = loadScripts(new URL('../../lua/', import.meta.url), ['acquire', 'register', 'release', 'extend'] as const);

/** How long a finished query is remembered, so that a redelivered copy of it is recognised. */
const FINISHED_MEMORY_MS = 24 * 3600_000;

// Per-session order and the cluster-wide pipeline cap (LangBot's concurrency.session = 1 and
// concurrency.pipeline = 20) as Redis leases. Every lease has a TTL that the live query refreshes, so
// a crashed holder frees its slot by expiry.
//
// Order: each session has a queue of waiting queries (a sorted set scored by the JetStream stream
// sequence, which is the arrival order). A query may take the session lease only when it heads it. The
// consumer hands messages out in stream order, but two replicas register them at slightly different
// moments; a query therefore becomes eligible only after it has been registered for `settleMs`, by
// which time any earlier message of the session has been registered too.

/** The session of a chat; its Redis keys come from `chatKey`, which keeps the web chat's apart. */
export type SessionRef = ChatRef;

export type AcquireOutcome = 'acquired' | 'session-busy' | 'not-head' | 'settling' | 'pipeline-full' | 'finished';

export interface LeaseOptions {
  ttlMs: number;
  settleMs: number;
  pipelineCap: number;
  /** A waiter not seen for this long is dropped from the queue. */
  staleMs: number;
}

export const DEFAULT_LEASE_OPTIONS: LeaseOptions = { ttlMs: 120_000, settleMs: 150, pipelineCap: 20, staleMs: 60_000 };

/** The one owner of a session lease's lifecycle: register, acquire, extend, release, finish. */
export class SessionLeases {
  private readonly redisKeys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly options: LeaseOptions = DEFAULT_LEASE_OPTIONS,
  ) {
    this.redisKeys = redisKeys(prefix);
  }

  private keys(s: SessionRef): string[] {
    const k = this.redisKeys;
    return [k.sessionQueue(s), k.sessionLease(s), k.pipelineSlots(), k.sessionFirstSeen(s), k.sessionLastSeen(s), k.sessionFinished(s)];
  }

  /** Registers the query in its session's queue (once) and takes the lease if it is its turn. */
  async acquire(s: SessionRef, queryId: string, streamSeq: number): Promise<AcquireOutcome> {
    const o = this.options;
    const r = Number(await scripts.acquire.run(this.redis, this.keys(s), [queryId, streamSeq, o.ttlMs, o.settleMs, o.pipelineCap, o.staleMs]));
    return r === 1 ? 'acquired' : r === 0 ? 'session-busy' : r === -1 ? 'not-head' : r === -2 ? 'settling' : r === -3 ? 'pipeline-full' : 'finished';
  }

  /**
   * Registers an accepted message in its session's queue at once, already settled. The ingress calls it
   * after the publish is acknowledged and before it answers: a message the client sent after getting
   * that answer has a higher stream sequence and cannot overtake it, so the orchestrator need not wait
   * out the settle time (which only covers messages that reach the bus by other paths).
   */
  async register(s: SessionRef, queryId: string, streamSeq: number): Promise<void> {
    await scripts.register.run(this.redis, this.keys(s), [queryId, streamSeq]);
  }

  /** Frees the lease and the slot and leaves the queue, the query may still run again (a retry); safe to call any number of times. */
  async release(s: SessionRef, queryId: string): Promise<boolean> {
    return Number(await scripts.release.run(this.redis, this.keys(s), [queryId, '0', FINISHED_MEMORY_MS])) === 1;
  }

  /** Releases for good: the query's reply ended, and a redelivered copy of it will not take the session again. */
  async finish(s: SessionRef, queryId: string): Promise<boolean> {
    return Number(await scripts.release.run(this.redis, this.keys(s), [queryId, '1', FINISHED_MEMORY_MS])) === 1;
  }

  /** Keeps a held lease alive for at least `ms` more. */
  async extend(s: SessionRef, queryId: string, ms: number = this.options.ttlMs): Promise<boolean> {
    return Number(await scripts.extend.run(this.redis, this.keys(s), [queryId, ms])) === 1;
  }

  async holder(s: SessionRef): Promise<string | null> {
    return this.redis.get(this.redisKeys.sessionLease(s));
  }
}
