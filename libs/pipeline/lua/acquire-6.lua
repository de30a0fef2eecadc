--[[
  Takes the session lease for a query when it heads its session's queue, has settled, and a pipeline
  slot is free; registers it in the queue otherwise. A query whose reply already ended never takes
  the session again (a redelivered copy of a finished query).

  KEYS[1] the session's waiting queries (zset by stream sequence)  redisKeys.sessionQueue
  KEYS[2] the session lease (holder: query id)                      redisKeys.sessionLease
  KEYS[3] the cluster's pipeline slots (zset: query id → expiry)    redisKeys.pipelineSlots
  KEYS[4] first-seen times of waiting queries (hash)                redisKeys.sessionFirstSeen
  KEYS[5] last-seen times of waiting queries (hash)                 redisKeys.sessionLastSeen
  KEYS[6] queries whose reply ended (zset: query id → time)         redisKeys.sessionFinished

  ARGV[1] query id
  ARGV[2] its stream sequence (the session's arrival order)
  ARGV[3] lease TTL, ms
  ARGV[4] settle time, ms
  ARGV[5] pipeline cap
  ARGV[6] stale, ms: a waiter not seen for this long is dropped from the queue

  Returns 1 acquired (or already held), 0 another query holds the session, -1 not the head of the
  queue, -2 still settling, -3 the pipeline is full, -4 the query already finished.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local ttl = tonumber(ARGV[3])
if redis.call('ZSCORE', KEYS[6], id) then return -4 end
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
return 1