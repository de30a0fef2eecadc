--[[
  Remembers queries whose reply ended, so a redelivered copy never takes the session again, and
  forgets those older than the memory.
]]
local function rememberFinished(finished, id, now, memoryMs)
  redis.call('ZADD', finished, now, id)
  redis.call('ZREMRANGEBYSCORE', finished, '-inf', now - tonumber(memoryMs))
  redis.call('PEXPIRE', finished, memoryMs)
end
