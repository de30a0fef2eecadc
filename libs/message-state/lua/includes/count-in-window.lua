--[[
  LangBot's fixed-window rate limit: the window is aligned to the epoch (bucket = now - now % window),
  a full window denies (and a denied request does not count), and buckets expire on their own. A
  bucket holds the ids of the queries it counted, so a redelivered copy of a query is allowed again
  without counting twice.

  Returns -1 when allowed (and counted once), else the milliseconds until the next window (at least
  1); and the bucket's key, so a count can be taken back (`uncountInWindow`).
]]
local function countInWindow(prefix, windowSeconds, limit, id, now)
  local windowMs = tonumber(windowSeconds) * 1000
  local bucket = now - (now % windowMs)
  local key = prefix .. ':q:' .. bucket
  if redis.call('SISMEMBER', key, id) == 1 then return -1, key end
  if redis.call('SCARD', key) >= tonumber(limit) then return bucket + windowMs - now, key end
  redis.call('SADD', key, id)
  redis.call('PEXPIRE', key, windowMs * 2)
  return -1, key
end

--[[
  Takes a query's count out of the bucket that counted it: the query was counted at admission and
  ended before the rate-limit stage, which LangBot would never have counted.
]]
local function uncountInWindow(bucketKey, id)
  redis.call('SREM', bucketKey, id)
end
