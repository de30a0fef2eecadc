--[[
  Takes a query out of its session's waiting queue: its place, its first- and last-seen times and
  its stashed envelope.
]]
local function leaveSessionQueue(queue, firstSeen, lastSeen, stashed, id)
  local left = redis.call('ZREM', queue, id)
  redis.call('HDEL', firstSeen, id)
  redis.call('HDEL', lastSeen, id)
  redis.call('HDEL', stashed, id)
  return left
end
