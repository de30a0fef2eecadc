--[[
  Gives a connection lease up at once (a draining replica), when it is still this owner's.

  KEYS[1] the lease (value `<owner>|<token>`)       redisKeys.connectionLease

  ARGV[1] `<owner>|<token>`

  Returns 1 when released, 0 when it was no longer this owner's.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
