import type { Redis } from 'ioredis';
import { evalScript } from '@conveyor/redis-scripts';

// Per-session order and the cluster-wide pipeline cap (LangBot's concurrency.session = 1 and
// concurrency.pipeline = 20) as Redis leases. Every lease has a TTL that the live query refreshes, so
// a crashed holder frees its slot by expiry.
//
// Order: each session has a queue of waiting queries (a sorted set scored by the JetStream stream
// sequence, which is the arrival order). A query may take the session lease only when it heads it. The
// consumer hands messages out in stream order, but two replicas register them at slightly different
// moments; a query therefore becomes eligible only after it has been registered for `settleMs`, by
// which time any earlier message of the session has been registered too.

const ACQUIRE = `
-- KEYS: 1 session queue, 2 session lease, 3 pipeline slots, 4 first-seen times, 5 last-seen times
-- ARGV: 1 queryId, 2 stream seq, 3 ttl ms, 4 settle ms, 5 pipeline cap, 6 stale ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local ttl = tonumber(ARGV[3])
local holder = redis.call('GET', KEYS[2])
if holder == id then
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('ZADD', KEYS[3], now + ttl, id)
  return 1
end
redis.call('ZADD', KEYS[1], 'NX', tonumber(ARGV[2]), id)
redis.call('HSETNX', KEYS[4], id, now)
redis.call('HSET', KEYS[5], id, now)
for _, k in ipairs({KEYS[1], KEYS[4], KEYS[5]}) do redis.call('PEXPIRE', k, 86400000) end
if holder then return 0 end
-- A waiter that stopped asking (its message was dead-lettered) must not block the queue forever.
local head
for _ = 1, 16 do
  head = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if head == id then break end
  local seen = tonumber(redis.call('HGET', KEYS[5], head) or '0')
  if now - seen <= tonumber(ARGV[6]) then break end
  redis.call('ZREM', KEYS[1], head)
  redis.call('HDEL', KEYS[4], head)
  redis.call('HDEL', KEYS[5], head)
end
if head ~= id then return -1 end
if now - tonumber(redis.call('HGET', KEYS[4], id)) < tonumber(ARGV[4]) then return -2 end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return -3 end
redis.call('SET', KEYS[2], id, 'PX', ttl)
redis.call('ZADD', KEYS[3], now + ttl, id)
-- The lease now stands for the query; it leaves the waiting queue.
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HDEL', KEYS[5], id)
return 1`;

const REGISTER = `
-- KEYS as ACQUIRE; ARGV: 1 queryId, 2 stream seq. First seen at 0: settled from the start.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'NX', tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], 0)
redis.call('HSET', KEYS[5], ARGV[1], now)
for _, k in ipairs({KEYS[1], KEYS[4], KEYS[5]}) do redis.call('PEXPIRE', k, 86400000) end
return 1`;

const RELEASE = `
-- KEYS as ACQUIRE; ARGV: 1 queryId
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) return 1 end
return 0`;

const EXTEND = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then redis.call('ZADD', KEYS[3], 'GT', now + ttl, ARGV[1]) end
return 1`;

export interface SessionRef {
  botId: string;
  launcherType: string;
  launcherId: string;
}

export type AcquireOutcome = 'acquired' | 'session-busy' | 'not-head' | 'settling' | 'pipeline-full';

export interface LeaseOptions {
  ttlMs: number;
  settleMs: number;
  pipelineCap: number;
  /** A waiter not seen for this long is dropped from the queue. */
  staleMs: number;
}

export const DEFAULT_LEASE_OPTIONS: LeaseOptions = { ttlMs: 120_000, settleMs: 150, pipelineCap: 20, staleMs: 60_000 };

export class SessionLeases {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly options: LeaseOptions = DEFAULT_LEASE_OPTIONS,
  ) {}

  private keys(s: SessionRef): string[] {
    const session = `${this.prefix}:session:${s.botId}:${s.launcherType}:${s.launcherId}`;
    return [`${session}:queue`, `${session}:lease`, `${this.prefix}:pipeline-slots`, `${session}:first-seen`, `${session}:last-seen`];
  }

  /** Registers the query in its session's queue (once) and takes the lease if it is its turn. */
  async acquire(s: SessionRef, queryId: string, streamSeq: number): Promise<AcquireOutcome> {
    const o = this.options;
    const r = Number(await evalScript(this.redis, ACQUIRE, 5, ...this.keys(s), queryId, streamSeq, o.ttlMs, o.settleMs, o.pipelineCap, o.staleMs));
    return r === 1 ? 'acquired' : r === 0 ? 'session-busy' : r === -1 ? 'not-head' : r === -2 ? 'settling' : 'pipeline-full';
  }

  /**
   * Registers an accepted message in its session's queue at once, already settled. The ingress calls it
   * after the publish is acknowledged and before it answers: a message the client sent after getting
   * that answer has a higher stream sequence and cannot overtake it, so the orchestrator need not wait
   * out the settle time (which only covers messages that reach the bus by other paths).
   */
  async register(s: SessionRef, queryId: string, streamSeq: number): Promise<void> {
    await evalScript(this.redis, REGISTER, 5, ...this.keys(s), queryId, streamSeq);
  }

  /** Frees the lease and the slot and leaves the queue; safe to call any number of times. */
  async release(s: SessionRef, queryId: string): Promise<boolean> {
    return Number(await evalScript(this.redis, RELEASE, 5, ...this.keys(s), queryId)) === 1;
  }

  /** Keeps a held lease alive for at least `ms` more. */
  async extend(s: SessionRef, queryId: string, ms: number = this.options.ttlMs): Promise<boolean> {
    return Number(await evalScript(this.redis, EXTEND, 5, ...this.keys(s), queryId, ms)) === 1;
  }

  async holder(s: SessionRef): Promise<string | null> {
    return this.redis.get(this.keys(s)[1]);
  }
}
