--[[
  endSessionTurn(K, A): frees the session lease and the pipeline slot of a query and takes it out of
  the queue; safe to run any number of times. K and A are laid out as `session-release`'s KEYS and
  ARGV (see there), and it returns what that script returns: 1 when the query held the lease.
]]
--- @include "now-ms"
--- @include "leave-session-queue"
--- @include "remember-finished"
--- @include "count-in-window"
local function endSessionTurn(K, A)
  local left = leaveSessionQueue(K[1], K[4], K[5], K[7], A[1])
  local slot = redis.call('ZREM', K[3], A[1])
  if A[2] == '1' then
    rememberFinished(K[6], A[1], nowMs(), A[3])
    redis.call('DEL', K[8])
  end
  if A[5] == '1' then uncountInWindow(K[9], A[1]) end
  local held = 0
  if redis.call('GET', K[2]) == A[1] then
    redis.call('DEL', K[2])
    held = 1
  end
  if held == 1 or slot == 1 or left == 1 then redis.call('PUBLISH', A[4], K[2]) end
  return held
end
