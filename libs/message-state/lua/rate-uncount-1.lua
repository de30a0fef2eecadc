--[[
  Gives a query's count back to the rate window bucket admission counted it in, when the query ended
  before the rate-limit stage without freeing its session here (its notices still go out, and the
  dispatcher frees the session after them). Where the orchestrator frees the session itself,
  `session-release` gives the count back in the same step.

  KEYS[1] the bucket that counted the query   (AdmittedRate.bucket: redisKeys.rateLimitWindow(session, key), `:q:`, the bucket start)

  ARGV[1] the query's id
]]
--- @include "count-in-window"
uncountInWindow(KEYS[1], ARGV[1])
return 1
