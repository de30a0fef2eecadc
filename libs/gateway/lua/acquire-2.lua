--[[
  Takes a bot's connection lease when nobody holds it, with a new fencing token; extends it when this
  owner already holds it. The token counter never expires and only rises, so a token handed out later
  is always larger than every earlier one, also across lease expiries.

  KEYS[1] the lease (value `<owner>|<token>`)       redisKeys.connectionLease
  KEYS[2] the bot's fencing token counter             redisKeys.connectionFence

  ARGV[1] owner id (a gateway replica)
  ARGV[2] lease TTL, ms

  Returns the token held (> 0), or 0 when another owner holds the lease.
]]
local held = redis.call('GET', KEYS[1])
if held then
  local sep = string.find(held, '|', 1, true)
  if sep and string.sub(held, 1, sep - 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(string.sub(held, sep + 1))
  end
  return 0
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
return token
