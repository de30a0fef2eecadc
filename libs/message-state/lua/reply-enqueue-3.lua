--[[
  Stores what one runner event produced (its parts and its seal) in one step.

  KEYS[1] the reply's state hash          redisKeys.reply(session, queryId)
  KEYS[2] the session's replies (zset)    redisKeys.replySessionReplies(session)
  KEYS[3] sessions with work (zset)       redisKeys.replyActiveSessions(session)

  ARGV[1] attempt of the run that produced the event
  ARGV[2] event seq (0, 1, ... within the attempt)
  ARGV[3] now, ms
  ARGV[4] state TTL, ms
  ARGV[5] query id
  ARGV[6] session member of the active set
  ARGV[7] seal: '<number of parts>|<seal entry JSON>'
  ARGV[8] '1' when the event is the run's last (its seal is terminal)
  ARGV[9..] the parts, JSON, in order

  Returns 1 stored, 0 duplicate (already stored or passed), -1 superseded attempt, -2 the reply has ended.

  Reply hash fields: attempt; next (first event not yet taken); p:<seq>:<i> parts; e:<seq> seals;
  seen (time of the last event); batch/progress/bts (the batch being sent); chunks/open/last (what the
  platform was shown); final ('1' once a final part went out: the user has the whole reply); closed
  ('1' once the run's last event was taken after it: the reply takes nothing more).
]]
--- @include "seal"
local key = KEYS[1]
if redis.call('HGET', key, 'closed') == '1' then return -2 end
local current = tonumber(redis.call('HGET', key, 'attempt') or '0')
local attempt = tonumber(ARGV[1])
if attempt < current then return -1 end
if attempt > current and redis.call('HGET', key, 'final') == '1' then
  -- The user already has the whole reply: a newer attempt (its runner died after the final part) may
  -- only end it, right where the reply stands; its parts would be a second reply under the same id.
  if ARGV[8] ~= '1' then return -2 end
  local at = redis.call('HGET', key, 'next') or '0'
  if redis.call('HEXISTS', key, 'e:' .. at) == 1 then return 0 end
  local _, entry = sealParts(ARGV[7])
  redis.call('HSET', key, 'e:' .. at, '0|' .. entry, 'seen', ARGV[3])
  redis.call('PEXPIRE', key, ARGV[4])
  redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[5])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[6])
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
local seq = tonumber(ARGV[2])
if seq < tonumber(redis.call('HGET', key, 'next') or '0') then return 0 end
if redis.call('HEXISTS', key, 'e:' .. seq) == 1 then return 0 end
for i = 9, #ARGV do
  redis.call('HSET', key, 'p:' .. seq .. ':' .. (i - 9), ARGV[i])
end
redis.call('HSET', key, 'e:' .. seq, ARGV[7], 'seen', ARGV[3])
redis.call('PEXPIRE', key, ARGV[4])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[6])
return 1
