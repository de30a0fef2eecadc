--[[
  Keeps a queued message's envelope for message aggregation, so whichever replica runs the head of its
  session can merge it, and records when the session's newest message came (the aggregation delay runs
  from there). A message that already ran, is running, or is stashed already changes nothing, so a
  redelivered copy does not restart the delay.

  KEYS[1] envelopes stashed for aggregation (hash: query id → JSON) redisKeys.sessionAggregatePending
  KEYS[2] when the newest envelope was stashed (ms)                 redisKeys.sessionAggregateNewest
  KEYS[3] queries whose reply ended (zset: query id → time)         redisKeys.sessionFinished
  KEYS[4] the session lease (holder: query id)                      redisKeys.sessionLease

  ARGV[1] query id
  ARGV[2] its envelope, JSON
  ARGV[3] most envelopes stashed per session: past it a message runs on its own

  Returns 1 when stashed now, else 0.
]]
--- @include "now-ms"
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then return 0 end
if redis.call('GET', KEYS[4]) == ARGV[1] then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
local now = nowMs()
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if now > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], now) end
redis.call('PEXPIRE', KEYS[1], 86400000)
redis.call('PEXPIRE', KEYS[2], 86400000)
return 1
