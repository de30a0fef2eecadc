--[[
  The server's clock in milliseconds. Redis TIME, not the caller's clock, so replicas with skewed
  clocks agree on settle times, lease expiries and windows.
]]
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
