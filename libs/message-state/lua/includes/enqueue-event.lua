--[[
  enqueueEvent(K, A, first): stores what one runner event produced (its parts and its seal) in one
  step. K and A are laid out as `reply-enqueue`'s KEYS and ARGV[1..8] (see there); the parts are
  A[first..].

  Returns 1 stored, 0 duplicate (already stored or passed), -1 superseded attempt, -2 the reply has ended.
]]
--- @include "seal"
local function enqueueEvent(K, A, first)
  local key = K[1]
  if redis.call('HGET', key, 'closed') == '1' then return -2 end
  local current = tonumber(redis.call('HGET', key, 'attempt') or '0')
  local attempt = tonumber(A[1])
  if attempt < current then return -1 end
  if attempt > current and redis.call('HGET', key, 'final') == '1' then
    -- The user already has the whole reply: a newer attempt (its runner died after the final part) may
    -- only end it, right where the reply stands; its parts would be a second reply under the same id.
    if A[8] ~= '1' then return -2 end
    local at = redis.call('HGET', key, 'next') or '0'
    if redis.call('HEXISTS', key, 'e:' .. at) == 1 then return 0 end
    local _, entry = sealParts(A[7])
    redis.call('HSET', key, 'e:' .. at, '0|' .. entry, 'seen', A[3])
    redis.call('PEXPIRE', key, A[4])
    redis.call('ZADD', K[2], 'NX', A[3], A[5])
    redis.call('ZADD', K[3], A[3], A[6])
    return 1
  end
  if attempt > current then
    -- A newer attempt replaces what the older one left unsent; what the platform was shown stays
    -- (open stream, last snapshot, numbering), so the new attempt continues the same reply.
    for _, field in ipairs(redis.call('HKEYS', key)) do
      local p = string.sub(field, 1, 2)
      if p == 'p:' or p == 'e:' then redis.call('HDEL', key, field) end
    end
    redis.call('HDEL', key, 'batch', 'progress', 'bts', 'gap')
    redis.call('HSET', key, 'attempt', attempt, 'next', 0)
  end
  local seq = tonumber(A[2])
  if seq < tonumber(redis.call('HGET', key, 'next') or '0') then return 0 end
  if redis.call('HEXISTS', key, 'e:' .. seq) == 1 then return 0 end
  for i = first, #A do
    redis.call('HSET', key, 'p:' .. seq .. ':' .. (i - first), A[i])
  end
  redis.call('HSET', key, 'e:' .. seq, A[7], 'seen', A[3])
  redis.call('PEXPIRE', key, A[4])
  redis.call('ZADD', K[2], 'NX', A[3], A[5])
  redis.call('PEXPIRE', K[2], A[4])
  redis.call('ZADD', K[3], A[3], A[6])
  return 1
end
