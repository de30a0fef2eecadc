--[[
  Starts the next attempt of a query's run: its number (1, 2, 3, …) and, for a traced attempt, its
  span kept for the next one, which gets the previous attempt's span back to link to. One round trip
  per run start, the span included: a span store of its own cost a write and a delete per traced run.

  KEYS[1] the run's attempt counter                          redisKeys.runAttempts(queryId)
  KEYS[2] the span of its latest traced attempt              redisKeys.runAttemptSpan(queryId)

  ARGV[1] how long the counter is kept, ms
  ARGV[2] this attempt's span ('' when it is not traced)
  ARGV[3] how long a span is kept, ms

  Returns {the new attempt number, the latest traced earlier attempt's span or ''}.
]]
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local previous = ''
if n > 1 then previous = redis.call('GET', KEYS[2]) or '' end
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return {n, previous}
