--[[
  LangBot's fixed-window rate limit in one atomic step: the window is aligned to the epoch
  (bucket = now - now % window), a full window denies (and a denied request does not count), and
  buckets expire on their own. Redis TIME is the clock, so replicas with skewed clocks share buckets.

  KEYS[1] the chat's window key prefix   redisKeys.rateLimitWindow(key); the bucket start is appended

  ARGV[1] window length, seconds
  ARGV[2] requests allowed per window

  Returns -1 allowed (and counted), else the milliseconds until the next window.
]]
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windowMs = tonumber(ARGV[1]) * 1000
local bucket = nowMs - (nowMs % windowMs)
local key = KEYS[1] .. ':' .. bucket
local count = tonumber(redis.call('GET', key) or '0')
if count >= tonumber(ARGV[2]) then return bucket + windowMs - nowMs end
redis.call('INCR', key)
redis.call('PEXPIRE', key, windowMs * 2)
return -1
