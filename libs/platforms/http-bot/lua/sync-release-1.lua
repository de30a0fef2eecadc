--[[
  Removes a session's /sync registration if this ingress replica still holds it (a later call may
  already have registered on another replica after this one's expired).

  KEYS[1] the session's /sync registration   redisKeys.syncWaiter(botId, sessionId)

  ARGV[1] the instance id of the replica letting go

  Returns 1 when the registration was removed, 0 when another replica holds it (or none does).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
