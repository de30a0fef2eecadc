import type { Redis } from 'ioredis';
import type { ReplyRoute } from '@conveyor/contracts';
import type { BatchEntry, QueuedPart } from './types.js';
import { evalScript } from '@conveyor/redis-scripts';

/**
 * Reply parts in Redis, shared by every dispatcher replica.
 *
 * Per reply (query) a hash holds the attempt being shown, the position (`next` event seq, `sub` part)
 * up to which parts were taken, the parts waiting (`p:<seq>:<sub>`) and the seals of handled events
 * (`e:<seq>` → count and whether the run ended). Parts are taken strictly in (seq, sub) order and only
 * past contiguous seals, so an event still being handled on another replica holds back the ones after
 * it; a part of an older attempt or behind the position is refused, which makes redelivered events
 * no-ops. Per session a sorted set keeps the replies in arrival order and a lease lets one replica at a
 * time send that session's parts; a taken batch stays in the hash until sent, so a replica that dies
 * mid-batch leaves it to the next lease holder.
 */

const ENQUEUE = `
local a = tonumber(redis.call('HGET', KEYS[1], 'attempt') or '0')
local att = tonumber(ARGV[1])
if att < a then return 0 end
if att > a then
  local fields = redis.call('HKEYS', KEYS[1])
  for _, k in ipairs(fields) do
    local p = string.sub(k, 1, 2)
    if p == 'p:' or p == 'e:' then redis.call('HDEL', KEYS[1], k) end
  end
  redis.call('HSET', KEYS[1], 'attempt', att, 'next', 0, 'sub', 0)
end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local seq = tonumber(ARGV[2])
if seq < nxt then return 0 end
if seq == nxt and ARGV[9] == 'p' and tonumber(ARGV[10]) < tonumber(redis.call('HGET', KEYS[1], 'sub') or '0') then return 0 end
local added = redis.call('HSETNX', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('ZADD', KEYS[2], 'NX', ARGV[6], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[8])
return added`;

/** Moves the ready parts of one reply into its `batch` (or returns the batch left by a dead replica). */
const TAKE = `
local b = redis.call('HGET', KEYS[1], 'batch')
if b then return {b, redis.call('HGET', KEYS[1], 'progress') or '0', 1} end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local sub = tonumber(redis.call('HGET', KEYS[1], 'sub') or '0')
local max = tonumber(ARGV[1])
local out = {}
local n = 0
while n < max do
  local pk = 'p:' .. nxt .. ':' .. sub
  local part = redis.call('HGET', KEYS[1], pk)
  if part then
    table.insert(out, part)
    redis.call('HDEL', KEYS[1], pk)
    sub = sub + 1
    n = n + 1
  else
    local ek = 'e:' .. nxt
    local seal = redis.call('HGET', KEYS[1], ek)
    if not seal then break end
    local sep = string.find(seal, '|', 1, true)
    local count = tonumber(string.sub(seal, 1, sep - 1))
    if sub < count then break end
    table.insert(out, string.sub(seal, sep + 1))
    redis.call('HDEL', KEYS[1], ek)
    nxt = nxt + 1
    sub = 0
    n = n + 1
  end
end
if n == 0 then return {false, '0', 0} end
local batch = '[' .. table.concat(out, ',') .. ']'
redis.call('HSET', KEYS[1], 'next', nxt, 'sub', sub, 'batch', batch, 'progress', 0)
return {batch, '0', 0}`;

const ACQUIRE = `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0`;
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/** Long enough for any reply to be delivered with all its retries; idle state then disappears. */
const STATE_TTL_MS = 6 * 3600_000;

export interface SessionId {
  botId: string;
  sessionId: string;
}

export class ReplyQueue {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  replyKey(queryId: string) {
    return `${this.prefix}:dlv:r:${queryId}`;
  }

  private sessionKey(route: SessionId) {
    return `${this.prefix}:dlv:s:${route.botId}:${route.sessionId}`;
  }

  get activeKey() {
    return `${this.prefix}:dlv:active`;
  }

  static sessionMember(route: SessionId): string {
    return JSON.stringify([route.botId, route.sessionId]);
  }

  private enqueueRaw(route: ReplyRoute, queryId: string, attempt: number, seq: number, field: string, value: string, kind: 'p' | 'e', sub: number) {
    return evalScript(this.redis, 
      ENQUEUE, 3,
      this.replyKey(queryId), `${this.sessionKey(route)}:replies`, this.activeKey,
      attempt, seq, field, value, queryId, Date.now(), STATE_TTL_MS, ReplyQueue.sessionMember(route), kind, sub,
    );
  }

  /** Adds a part; false when it is a duplicate or belongs to a superseded attempt. */
  async enqueuePart(attempt: number, seq: number, sub: number, part: QueuedPart): Promise<boolean> {
    return (await this.enqueueRaw(part.route, part.queryId, attempt, seq, `p:${seq}:${sub}`, JSON.stringify({ t: 'part', part }), 'p', sub)) === 1;
  }

  /** Marks event `seq` as handled, having produced `count` parts. */
  async seal(route: ReplyRoute, queryId: string, attempt: number, seq: number, count: number, terminal: boolean): Promise<boolean> {
    const entry: BatchEntry = { t: 'seal', queryId, terminal, route };
    return (await this.enqueueRaw(route, queryId, attempt, seq, `e:${seq}`, `${count}|${JSON.stringify(entry)}`, 'e', 0)) === 1;
  }

  /** Replies of a session in arrival order. */
  replies(s: SessionId): Promise<string[]> {
    return this.redis.zrange(`${this.sessionKey(s)}:replies`, "0", "99");
  }

  async forgetReply(s: SessionId, queryId: string): Promise<void> {
    await this.redis.zrem(`${this.sessionKey(s)}:replies`, queryId);
  }

  /** The batch to send for a reply: fresh, or resumed (with how many of its parts were already sent). */
  async take(queryId: string, max = 256): Promise<{ entries: BatchEntry[]; progress: number; resumed: boolean } | null> {
    const [batch, progress, resumed] = (await evalScript(this.redis, TAKE, 1, this.replyKey(queryId), max)) as [string | null, string, number];
    if (!batch) return null;
    return { entries: JSON.parse(batch) as BatchEntry[], progress: Number(progress), resumed: resumed === 1 };
  }

  async setProgress(queryId: string, progress: number): Promise<void> {
    await this.redis.hset(this.replyKey(queryId), 'progress', progress);
  }

  async finishBatch(queryId: string): Promise<void> {
    await this.redis.hdel(this.replyKey(queryId), 'batch', 'progress');
  }

  async hasPending(queryId: string): Promise<boolean> {
    const fields = await this.redis.hkeys(this.replyKey(queryId));
    return fields.some((f) => f === 'batch' || f.startsWith('p:') || f.startsWith('e:'));
  }

  /** Whether a take would return something now (the next part or seal is there, or a batch is left over). */
  async takeable(queryId: string): Promise<boolean> {
    const key = this.replyKey(queryId);
    const [next, sub, batch] = await this.redis.hmget(key, 'next', 'sub', 'batch');
    if (batch) return true;
    const n = Number(next ?? 0);
    const [p, e] = await Promise.all([this.redis.hexists(key, `p:${n}:${Number(sub ?? 0)}`), this.redis.hexists(key, `e:${n}`)]);
    return p === 1 || e === 1;
  }

  hget(queryId: string, field: string) {
    return this.redis.hget(this.replyKey(queryId), field);
  }

  async hset(queryId: string, field: string, value: string | number) {
    await this.redis.hset(this.replyKey(queryId), field, value);
  }

  async acquire(s: SessionId, token: string, ttlMs: number): Promise<boolean> {
    return (await evalScript(this.redis, ACQUIRE, 1, `${this.sessionKey(s)}:lease`, token, ttlMs)) === 1;
  }

  async renew(s: SessionId, token: string, ttlMs: number): Promise<boolean> {
    return (await evalScript(this.redis, RENEW, 1, `${this.sessionKey(s)}:lease`, token, ttlMs)) === 1;
  }

  async release(s: SessionId, token: string): Promise<void> {
    await evalScript(this.redis, RELEASE, 1, `${this.sessionKey(s)}:lease`, token);
  }

  /** Sessions that had parts recently, oldest activity first. */
  async activeSessions(limit = 200): Promise<SessionId[]> {
    const members = await this.redis.zrange(this.activeKey, "0", String(limit - 1));
    return members.map((m) => {
      const [botId, sessionId] = JSON.parse(m) as [string, string];
      return { botId, sessionId };
    });
  }

  async deactivate(s: SessionId): Promise<void> {
    await this.redis.zrem(this.activeKey, ReplyQueue.sessionMember(s));
  }
}
