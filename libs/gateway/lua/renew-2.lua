--[[
  Extends a connection lease when it is still held by this owner with this token, and only then,
  together with the state the connection keeps (if any), so that state lives as long as the lease
  plus its grace and a successor still finds it after the holder died.

  KEYS[1] the lease (value `<owner>|<token>`)       redisKeys.connectionLease
  KEYS[2] the connection's state                      redisKeys.connectionState

  ARGV[1] `<owner>|<token>`
  ARGV[2] lease TTL, ms
  ARGV[3] state TTL, ms (the lease TTL plus the grace the state outlives it by)

  Returns 1 when extended, 0 when the lease expired or another owner holds it.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
