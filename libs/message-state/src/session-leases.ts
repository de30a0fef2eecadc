import { DEFAULT_KEY_LAYOUT, pipelineShardCap, redisKeys, type ChatRef, type RedisKeyLayout, type RedisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';
import { ACQUIRE_RESULTS, HELD_RESULTS, resultName, ScriptResultError } from './results.js';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['session-acquire', 'session-register', 'session-release', 'session-extend', 'session-stash'] as const);

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

export type AcquireOutcome = keyof typeof ACQUIRE_RESULTS;

/** Message aggregation for a session's head (LangBot's `trigger.message-aggregation`). */
export interface AggregationTurn {
  /** How long after the session's newest message the head waits for more. */
  delayMs: number;
  /** Most messages in one merged query, the head included. */
  maxMessages: number;
  /** Most bytes of envelope JSON in one merged query. */
  maxBytes: number;
  /** Bytes of the head's own envelope JSON. */
  ownBytes: number;
}

/**
 * The chat's rate window that the pipeline's rate-limit stage will ask about (LangBot's
 * RequireRateLimitOccupancy): admission decides it in the same round trip as the lease.
 */
export interface RateWindowRequest {
  /** Bot, pipeline and chat (`rateLimitKey`). */
  key: string;
  windowSeconds: number;
  limit: number;
}

/**
 * What admission decided about the rate window: allowed and counted once in `bucket` (the key a
 * query that ends before the stage gives its count back to), or full until the next window.
 */
export type AdmittedRate = { allowed: true; bucket: string } | { allowed: false; retryInMs: number };

export interface TurnResult {
  outcome: AcquireOutcome;
  /** When `aggregating`: how long until the head may run; when `settling`: until it has settled. */
  waitMs: number;
  /** When `acquired`: the envelopes (JSON) of the messages merged into this query, in order. */
  merged: string[];
  /** When `acquired` with a rate window asked for: its decision. */
  rate?: AdmittedRate;
}

const NO_AGGREGATION: AggregationTurn = { delayMs: 0, maxMessages: 1, maxBytes: 0, ownBytes: 0 };

export interface LeaseOptions {
  ttlMs: number;
  settleMs: number;
  /** The cluster-wide pipeline cap; with several pipeline shards each admits its share (`pipelineShardCap`). */
  pipelineCap: number;
  /** A waiter not seen for this long is dropped from the queue. */
  staleMs: number;
}

/** `session-release`'s KEYS and ARGV for one query, for a script that runs the release inside it. */
export interface SessionReleaseStep {
  keys: string[];
  args: (string | number)[];
}

export const DEFAULT_LEASE_OPTIONS: LeaseOptions = { ttlMs: 120_000, settleMs: 150, pipelineCap: 20, staleMs: 60_000 };

/** The one owner of a session lease's lifecycle: register, acquire, extend, release, finish. */
export class SessionLeases {
  private readonly redisKeys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    readonly options: LeaseOptions = DEFAULT_LEASE_OPTIONS,
    private readonly layout: RedisKeyLayout = DEFAULT_KEY_LAYOUT,
  ) {
    this.redisKeys = redisKeys(prefix, layout);
  }

  private keys(s: SessionRef): string[] {
    const k = this.redisKeys;
    return [k.sessionQueue(s), k.sessionLease(s), k.pipelineSlots(s), k.sessionFirstSeen(s), k.sessionLastSeen(s), k.sessionFinished(s)];
  }

  /** The slots the session's shard of the pipeline cap admits. */
  private shardCap(s: SessionRef): number {
    const shards = this.layout.pipelineShards;
    return shards === 1 ? this.options.pipelineCap : pipelineShardCap(this.options.pipelineCap, shards, this.redisKeys.pipelineShard(s));
  }

  private releaseKeys(s: SessionRef, queryId: string): string[] {
    return [...this.keys(s), this.redisKeys.sessionAggregatePending(s), this.redisKeys.sessionAggregateMerged(s, queryId)];
  }

  /** Registers the query in its session's queue (once) and takes the lease if it is its turn. */
  async acquire(s: SessionRef, queryId: string, streamSeq: number): Promise<AcquireOutcome> {
    return (await this.acquireTurn(s, queryId, streamSeq)).outcome;
  }

  /**
   * `acquire`, with message aggregation when given: the head waits (`aggregating`) until the delay has
   * passed since the session's newest stashed message, then takes the consecutive stashed messages after
   * it. A head that already merged gets the same messages again (a redelivered or retried head).
   */
  async acquireTurn(s: SessionRef, queryId: string, streamSeq: number, aggregation: AggregationTurn = NO_AGGREGATION, rateWindow?: RateWindowRequest): Promise<TurnResult> {
    const o = this.options;
    const k = this.redisKeys;
    const window = rateWindow ? k.rateLimitWindow(s, rateWindow.key) : k.sessionLease(s);
    const keys = [...this.keys(s), k.sessionAggregatePending(s), k.sessionAggregateNewest(s), k.sessionAggregateMerged(s, queryId), window];
    const a = aggregation;
    const reply = await scripts['session-acquire'].run(this.redis, keys, [
      queryId, streamSeq, o.ttlMs, o.settleMs, this.shardCap(s), o.staleMs, a.delayMs, a.maxMessages, a.maxBytes, a.ownBytes, FINISHED_MEMORY_MS,
      rateWindow?.windowSeconds ?? 0, rateWindow?.limit ?? 0,
    ]);
    if (!Array.isArray(reply) || reply.length < 4) throw new ScriptResultError('session-acquire', reply);
    const outcome = resultName('session-acquire', ACQUIRE_RESULTS, reply[0]);
    const result: TurnResult = { outcome, waitMs: Number(reply[1]), merged: reply.slice(4).map(String) };
    const rate = Number(reply[2]);
    if (outcome === 'acquired' && rateWindow) {
      if (rate === -1) result.rate = { allowed: true, bucket: String(reply[3]) };
      else if (rate > 0) result.rate = { allowed: false, retryInMs: rate };
      else throw new ScriptResultError('session-acquire', reply);
    }
    return result;
  }

  /**
   * Keeps a queued message's envelope for message aggregation (once; a redelivered copy does not
   * restart the delay). At most `maxPending` per session: past that a message runs on its own.
   */
  async stash(s: SessionRef, queryId: string, envelopeJson: string, maxPending: number): Promise<boolean> {
    const k = this.redisKeys;
    const keys = [k.sessionAggregatePending(s), k.sessionAggregateNewest(s), k.sessionFinished(s), k.sessionLease(s)];
    return Number(await scripts['session-stash'].run(this.redis, keys, [queryId, envelopeJson, maxPending])) === 1;
  }

  /**
   * Registers an accepted message in its session's queue at once, already settled. The ingress calls it
   * after the publish is acknowledged and before it answers: a message the client sent after getting
   * that answer has a higher stream sequence and cannot overtake it, so the orchestrator need not wait
   * out the settle time (which only covers messages that reach the bus by other paths).
   */
  async register(s: SessionRef, queryId: string, streamSeq: number): Promise<void> {
    await scripts['session-register'].run(this.redis, this.keys(s), [queryId, streamSeq, this.redisKeys.sessionRegisteredChannel()]);
  }

  /**
   * Frees the lease and the slot and leaves the queue, the query may still run again (a retry); safe
   * to call any number of times. `uncount`: the rate window bucket admission counted the query in,
   * when it ended before the rate-limit stage (its count is given back in the same step).
   */
  async release(s: SessionRef, queryId: string, uncount?: string): Promise<boolean> {
    return this.releaseAs(s, queryId, '0', uncount);
  }

  /** Releases for good: the query's reply ended, and a redelivered copy of it will not take the session again. */
  async finish(s: SessionRef, queryId: string, uncount?: string): Promise<boolean> {
    return this.releaseAs(s, queryId, '1', uncount);
  }

  private async releaseAs(s: SessionRef, queryId: string, finished: '0' | '1', uncount: string | undefined): Promise<boolean> {
    const step = this.releaseStep(s, queryId, finished, uncount);
    return resultName('session-release', HELD_RESULTS, await scripts['session-release'].run(this.redis, step.keys, step.args)) === 'held';
  }

  private releaseStep(s: SessionRef, queryId: string, finished: '0' | '1', uncount: string | undefined): SessionReleaseStep {
    return {
      keys: [...this.releaseKeys(s, queryId), uncount ?? this.redisKeys.sessionLease(s)],
      args: [queryId, finished, FINISHED_MEMORY_MS, this.redisKeys.sessionFreedChannel(), uncount ? '1' : '0'],
    };
  }

  /**
   * `finish` as the keys and arguments of `session-release`, for a script that ends the turn in the
   * same step as its own work (the delivery's `reply-*-ending`, which includes the same Lua).
   */
  finishStep(s: SessionRef, queryId: string): SessionReleaseStep {
    return this.releaseStep(s, queryId, '1', undefined);
  }

  /** Keeps a held lease alive for at least `ms` more. */
  async extend(s: SessionRef, queryId: string, ms: number = this.options.ttlMs): Promise<boolean> {
    return resultName('session-extend', HELD_RESULTS, await scripts['session-extend'].run(this.redis, this.keys(s), [queryId, ms])) === 'held';
  }

  async holder(s: SessionRef): Promise<string | null> {
    return this.redis.get(this.redisKeys.sessionLease(s));
  }
}
