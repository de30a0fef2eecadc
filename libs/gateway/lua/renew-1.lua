--[[
  Extends a connection lease when it is still held by this owner with this token, and only then.

  KEYS[1] the lease (value `<owner>|<token>`)       redisKeys.connectionLease

  ARGV[1] `<owner>|<token>`
  ARGV[2] lease TTL, ms

  Returns 1 when extended, 0 when the lease expired or another owner holds it.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
