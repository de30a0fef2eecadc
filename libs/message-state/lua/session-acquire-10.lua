--[[
  Takes the session lease for a query when it heads its session's queue, has settled, and a pipeline
  slot is free; registers it in the queue otherwise. A query whose reply already ended never takes
  the session again (a redelivered copy of a finished query).

  With message aggregation (ARGV[7] > 0) the head waits until the delay has passed since the newest
  message stashed for aggregation, unless enough messages are queued to fill one merged query, then
  takes the consecutive queued messages after it whose envelopes are stashed: they leave the queue, are
  remembered as finished (their own deliveries are dropped) and are kept with the head in KEYS[9], so a
  redelivered head runs the same merged query.

  KEYS[1] the session's waiting queries (zset by stream sequence)  redisKeys.sessionQueue
  KEYS[2] the session lease (holder: query id)                      redisKeys.sessionLease
  KEYS[3] the session's shard of the pipeline slots (zset: query id → expiry)  redisKeys.pipelineSlots(session)
  KEYS[4] first-seen times of waiting queries (hash)                redisKeys.sessionFirstSeen
  KEYS[5] last-seen times of waiting queries (hash)                 redisKeys.sessionLastSeen
  KEYS[6] queries whose reply ended (zset: query id → time)         redisKeys.sessionFinished
  KEYS[7] envelopes stashed for aggregation (hash: query id → JSON) redisKeys.sessionAggregatePending
  KEYS[8] when the newest envelope was stashed (ms)                 redisKeys.sessionAggregateNewest
  KEYS[9] envelopes merged into this query (list, in order)         redisKeys.sessionAggregateMerged
  KEYS[10] the chat's rate window key prefix (the session lease again when ARGV[12] is 0)  redisKeys.rateLimitWindow(session, key)

  ARGV[1] query id
  ARGV[2] its stream sequence (the session's arrival order)
  ARGV[3] lease TTL, ms
  ARGV[4] settle time, ms
  ARGV[5] the slots KEYS[3] admits (the pipeline cap, or its shard's share of it)
  ARGV[6] stale, ms: a waiter not seen for this long is dropped from the queue
  ARGV[7] aggregation delay, ms; 0 when aggregation is off
  ARGV[8] most messages in one merged query, the head included
  ARGV[9] most bytes of envelope JSON in one merged query
  ARGV[10] bytes of the head's own envelope JSON
  ARGV[11] how long finished queries are remembered, ms
  ARGV[12] the rate window's length, seconds; 0 when the pipeline has no rate-limit stage before its run
  ARGV[13] requests the rate window allows

  Admission decides the rate window too (LangBot's RequireRateLimitOccupancy, which comes later among
  the stages): the session lease already makes the query the only one of its chat in the stages, so
  the decision is the one the stage would take, one round trip earlier. A query that ends before the
  stage gives its count back as it leaves (`session-release`).

  Returns {code, wait ms, rate, bucket, merged envelope JSON...}: code 1 acquired (or already held; the
  envelopes merged into it follow), 0 another query holds the session, -1 not the head of the queue,
  -2 still settling (the wait: until it has settled), -3 the pipeline is full, -4 the query already
  finished, -5 aggregating: ask again after the wait. When acquired with a rate window: rate -1 allowed
  (counted once, in the bucket named next), else the ms until the next window; rate 0 and bucket ''
  otherwise.
]]
--- @include "now-ms"
--- @include "leave-session-queue"
--- @include "remember-finished"
--- @include "count-in-window"
local now = nowMs()
local id = ARGV[1]
local ttl = tonumber(ARGV[3])
local delay = tonumber(ARGV[7])
if redis.call('ZSCORE', KEYS[6], id) then return {-4, 0, 0, ''} end
local function rateWindow()
  if tonumber(ARGV[12]) == 0 then return 0, '' end
  return countInWindow(KEYS[10], ARGV[12], ARGV[13], id, now)
end
local holder = redis.call('GET', KEYS[2])
if holder == id then
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('ZADD', KEYS[3], now + ttl, id)
  local rate, bucket = rateWindow()
  local held = {1, 0, rate, bucket}
  for _, e in ipairs(redis.call('LRANGE', KEYS[9], 0, -1)) do held[#held + 1] = e end
  return held
end
redis.call('ZADD', KEYS[1], 'NX', tonumber(ARGV[2]), id)
redis.call('HSETNX', KEYS[4], id, now)
redis.call('HSET', KEYS[5], id, now)
for _, k in ipairs({KEYS[1], KEYS[4], KEYS[5]}) do redis.call('PEXPIRE', k, 86400000) end
if holder then return {0, 0, 0, ''} end
-- A waiter that stopped asking (its message was dead-lettered) must not block the queue forever, nor
-- a message that already ended (dropped before its turn, then queued by a registration that landed
-- later from a replica that does not know to refuse it).
local head
for _ = 1, 16 do
  head = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if head == id then break end
  local seen = tonumber(redis.call('HGET', KEYS[5], head) or '0')
  if now - seen <= tonumber(ARGV[6]) and not redis.call('ZSCORE', KEYS[6], head) then break end
  leaveSessionQueue(KEYS[1], KEYS[4], KEYS[5], KEYS[7], head)
end
if head ~= id then return {-1, 0, 0, ''} end
local settled = tonumber(redis.call('HGET', KEYS[4], id)) + tonumber(ARGV[4]) - now
if settled > 0 then return {-2, settled, 0, ''} end
local merged = {}
-- A head that already merged (it gave the session up for a retry) keeps what it merged and takes no more.
if delay > 0 and redis.call('EXISTS', KEYS[9]) == 0 then
  local most = tonumber(ARGV[8])
  local budget = tonumber(ARGV[9]) - tonumber(ARGV[10])
  local full = #merged + 1 >= most
  for _, next in ipairs(redis.call('ZRANGE', KEYS[1], 1, most - 1)) do
    local e = redis.call('HGET', KEYS[7], next)
    -- Only consecutive messages: one not stashed yet (or too large to stash) runs after this one.
    if not e then break end
    if #e > budget then
      full = true
      break
    end
    budget = budget - #e
    merged[#merged + 1] = {next, e}
  end
  if #merged + 1 >= most then full = true end
  if not full then
    local newest = tonumber(redis.call('GET', KEYS[8]) or '0')
    if now - newest < delay then return {-5, newest + delay - now, 0, ''} end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return {-3, 0, 0, ''} end
redis.call('SET', KEYS[2], id, 'PX', ttl)
redis.call('ZADD', KEYS[3], now + ttl, id)
-- The lease now stands for the query; it leaves the waiting queue.
leaveSessionQueue(KEYS[1], KEYS[4], KEYS[5], KEYS[7], id)
local rate, bucket = rateWindow()
local out = {1, 0, rate, bucket}
for _, m in ipairs(merged) do
  leaveSessionQueue(KEYS[1], KEYS[4], KEYS[5], KEYS[7], m[1])
  rememberFinished(KEYS[6], m[1], now, ARGV[11])
  redis.call('RPUSH', KEYS[9], m[2])
  out[#out + 1] = m[2]
end
if #merged > 0 then redis.call('PEXPIRE', KEYS[9], ARGV[11]) end
-- A head retrying after it gave the session up runs what it merged before.
if #merged == 0 then
  for _, e in ipairs(redis.call('LRANGE', KEYS[9], 0, -1)) do out[#out + 1] = e end
end
return out
