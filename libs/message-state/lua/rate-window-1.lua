--[[
  LangBot's fixed-window rate limit in one atomic step: the window is aligned to the epoch
  (bucket = now - now % window), a full window denies (and a denied request does not count), and
  buckets expire on their own. Redis TIME is the clock, so replicas with skewed clocks share buckets.
  A bucket holds the ids of the queries it counted, so a redelivered copy of a query (its orchestrator
  died after the stage) is allowed again without counting twice.

  KEYS[1] the chat's window key prefix   redisKeys.rateLimitWindow(key); `:q:` and the bucket start are appended

  ARGV[1] window length, seconds
  ARGV[2] requests allowed per window
  ARGV[3] the query's id

  Returns -1 allowed (and counted once), else the milliseconds until the next window.
]]
--- @include "now-ms"
local now = nowMs()
local windowMs = tonumber(ARGV[1]) * 1000
local bucket = now - (now % windowMs)
local key = KEYS[1] .. ':q:' .. bucket
if redis.call('SISMEMBER', key, ARGV[3]) == 1 then return -1 end
if redis.call('SCARD', key) >= tonumber(ARGV[2]) then return bucket + windowMs - now end
redis.call('SADD', key, ARGV[3])
redis.call('PEXPIRE', key, windowMs * 2)
return -1
