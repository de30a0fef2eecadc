--[[
  Stores (or removes) the state a held connection keeps for the next holder of its bot, only while
  the writer holds the bot's lease with this token: a former holder that was paused past its lease
  (GC, partition) cannot overwrite what the replica that took over wrote.

  KEYS[1] the lease (value `<owner>|<token>`)       redisKeys.connectionLease
  KEYS[2] the connection's state                      redisKeys.connectionState

  ARGV[1] `<owner>|<token>`
  ARGV[2] the state as JSON; empty removes it
  ARGV[3] state TTL, ms (the lease TTL plus the grace the state outlives it by)

  Returns 1 when written (or removed), 0 when the lease is not this owner's with this token.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[2])
else
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
end
return 1
