--[[
  Keeps a held session lease (and its pipeline slot) alive for at least ARGV[2] more.

  KEYS[1] the session's waiting queries (zset by stream sequence)  redisKeys.sessionQueue
  KEYS[2] the session lease (holder: query id)                      redisKeys.sessionLease
  KEYS[3] the session's shard of the pipeline slots (zset: query id → expiry)  redisKeys.pipelineSlots(session)
  KEYS[4] first-seen times of waiting queries (hash)                redisKeys.sessionFirstSeen
  KEYS[5] last-seen times of waiting queries (hash)                 redisKeys.sessionLastSeen
  KEYS[6] queries whose reply ended (zset: query id → time)         redisKeys.sessionFinished

  ARGV[1] query id
  ARGV[2] ms

  Returns 1 when the query holds the lease, else 0.
]]
--- @include "now-ms"
local now = nowMs()
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then redis.call('ZADD', KEYS[3], 'GT', now + ttl, ARGV[1]) end
return 1