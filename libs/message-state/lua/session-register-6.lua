--[[
  Registers an accepted message in its session's queue, settled from the start (first seen at 0).
  When the orchestrator saw the message first (it is settling there), says so on ARGV[3], so the
  waiting query asks again at once instead of waiting out the settle time. A message that already
  ended (the stages before its turn dropped it, at the orchestrator, before this landed) is not
  queued: it would head the queue and hold the session's later messages back.

  KEYS[1] the session's waiting queries (zset by stream sequence)  redisKeys.sessionQueue
  KEYS[2] the session lease (holder: query id)                      redisKeys.sessionLease
  KEYS[3] the session's shard of the pipeline slots (zset: query id → expiry)  redisKeys.pipelineSlots(session)
  KEYS[4] first-seen times of waiting queries (hash)                redisKeys.sessionFirstSeen
  KEYS[5] last-seen times of waiting queries (hash)                 redisKeys.sessionLastSeen
  KEYS[6] queries whose reply ended (zset: query id → time)         redisKeys.sessionFinished

  ARGV[1] query id
  ARGV[2] its stream sequence
  ARGV[3] the channel a settling query is woken on    redisKeys.sessionRegisteredChannel

  Returns 1 when registered, 0 when the message had already ended.
]]
--- @include "now-ms"
if redis.call('ZSCORE', KEYS[6], ARGV[1]) then return 0 end
local now = nowMs()
local seen = redis.call('HGET', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[1], 'NX', tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], 0)
redis.call('HSET', KEYS[5], ARGV[1], now)
for _, k in ipairs({KEYS[1], KEYS[4], KEYS[5]}) do redis.call('PEXPIRE', k, 86400000) end
if seen and seen ~= '0' then redis.call('PUBLISH', ARGV[3], KEYS[2]) end
return 1