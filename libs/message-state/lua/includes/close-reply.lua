--[[
  closeReply(key): marks a reply ended, keeping of its state only what answers for it from then on:
  `closed`, which refuses its later events, and `attempt`, `next`, `final` and `sequence`, which
  `ReplyQueue.passed` and `admits` read. What the platform was shown and the parts are of no use to a
  reply that ended. Its hash took Redis's table encoding as soon as one part was longer than
  `hash-max-listpack-value`, and HDEL never turns it back: about 900 bytes for each of the 6 h a
  reply's state is kept. Written anew, the few short fields are a listpack of about 100.
]]
local function closeReply(key)
  local names = {'attempt', 'next', 'final', 'sequence'}
  local kept = redis.call('HMGET', key, unpack(names))
  local ttl = redis.call('PTTL', key)
  redis.call('DEL', key)
  local fields = {'closed', '1'}
  for i, name in ipairs(names) do
    if kept[i] then
      fields[#fields + 1] = name
      fields[#fields + 1] = kept[i]
    end
  end
  redis.call('HSET', key, unpack(fields))
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
