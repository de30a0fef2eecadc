--[[
  LangBot's fixed-window rate limit in one atomic step, for a query the admission did not count
  (its pipeline's settings changed between admission and the stage). Redis TIME is the clock, so
  replicas with skewed clocks share buckets.

  KEYS[1] the chat's window key prefix   redisKeys.rateLimitWindow(session, key); `:q:` and the bucket start are appended

  ARGV[1] window length, seconds
  ARGV[2] requests allowed per window
  ARGV[3] the query's id

  Returns -1 allowed (and counted once), else the milliseconds until the next window.
]]
--- @include "now-ms"
--- @include "count-in-window"
local decision = countInWindow(KEYS[1], ARGV[1], ARGV[2], ARGV[3], nowMs())
return decision
