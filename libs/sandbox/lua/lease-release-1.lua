--[[
  Lets go of a workspace lease if this call still holds it (it may have expired and been taken).

  KEYS[1] the lease   redisKeys.sandboxWorkspaceLease(workspaceId)

  ARGV[1] the holder's token

  Returns 1 when released, 0 when the lease is another holder's (or nobody's).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
