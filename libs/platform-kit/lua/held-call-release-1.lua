--[[
  Removes a registration (a held call, a lock) if this replica still holds it: a later holder may
  already have registered on another replica after this one's expired.

  KEYS[1] the registration   redisKeys.syncWaiter(botId, callKey) or redisKeys.accessTokenLock(...)

  ARGV[1] the instance id (or lock token) of the holder letting go

  Returns 1 when the registration was removed, 0 when another holder has it (or none does).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
