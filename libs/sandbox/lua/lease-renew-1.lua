--[[
  Extends a workspace lease while its holder still has it: a lease that expired and was taken by
  another call must not be extended by the one that lost it.

  KEYS[1] the lease   redisKeys.sandboxWorkspaceLease(workspaceId)

  ARGV[1] the holder's token
  ARGV[2] the new time to live, in milliseconds

  Returns 1 when extended, 0 when the lease is another holder's (or nobody's).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
