--[[
  The next attempt number of a query's run: 1, 2, 3, … (one round trip, where MULTI/INCR/PEXPIRE/EXEC
  were four commands).

  KEYS[1] the run's attempt counter   redisKeys.runAttempts(queryId)

  ARGV[1] how long the counter is kept, ms

  Returns the new attempt number.
]]
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n
