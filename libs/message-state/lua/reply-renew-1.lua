--[[
  Extends a lease held by this replica, and only then.

  KEYS[1] the lease
  ARGV[1] lease token
  ARGV[2] lease TTL, ms

  Returns 1 when extended, 0 when the lease is another's or gone.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
