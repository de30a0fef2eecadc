--[[
  Records that the batch taken by `take` went out, and what the platform was shown; then either lets
  the session's sender lease go when `take` would find nothing ready, which saves the replica a `take`
  that returns idle after every batch, or takes the session's next batch in the same step (`take`'s
  transition, run here: one round trip where the replica would make two back to back).

  KEYS[1] the reply's state hash            redisKeys.reply(session, queryId)
  KEYS[2] the session's sender lease         redisKeys.replySessionSender(session)
  KEYS[3] the session's callback numbering   redisKeys.replySessionSequence(session)
  KEYS[4] the session's replies (zset)       redisKeys.replySessionReplies(session)
  KEYS[5] sessions with work (zset)          redisKeys.replyActiveSessions(session)
  KEYS[6] the common start of the session's reply keys  redisKeys.replyPrefix(session) (as `reply-take`'s KEYS[5])
  KEYS[7] the session's held-call mark       redisKeys.replyHeldCallMark(session)

  ARGV[1] lease token
  ARGV[2] lease TTL, ms
  ARGV[3] streamed snapshots shown so far (chunks)
  ARGV[4] '1' while a stream is open
  ARGV[5] the newest snapshot shown (JSON message chain)
  ARGV[6] '1' when the reply ended (its final part went out)
  ARGV[7] the last callback sequence used in the session
  ARGV[8] '1' when that callback was final
  ARGV[9] numbering TTL, ms
  ARGV[10] '1' when a final part went out in this batch
  ARGV[11] the reply's query id (its member of KEYS[4])
  ARGV[12] session member of the active set
  ARGV[13] now, ms
  ARGV[14] stall, ms (as `take`'s ARGV[7])

  ARGV[15] attempt of the events in the batch
  ARGV[16] the last event seq in the batch (-1: none)
  ARGV[17] the session's callback numbering the batch started from, '<seq>|<final>' (as `take` gave it)
  ARGV[18] the highest callback sequence the batch used, '' when it sent nothing: kept with the reply,
           so that its later parts continue above it even when another reply of the session restarted
           the session's numbering meanwhile (two replies of a session interleave only after Redis lost
           the session's turn)
  ARGV[19] most entries in one batch (as `take`'s ARGV[3])
  ARGV[20] gap, ms (as `take`'s ARGV[6])

  Returns {1, take result...} when the session may have more to send: the lease is kept and the next
  batch was taken for it (`reply-take`'s reply follows the 1: a batch, or idle with the lease let go);
  {2} when nothing is ready (the lease is released); or {0} when this replica lost the lease
  meanwhile (the next holder sends the batch again, byte for byte, and the platform's idempotency key
  absorbs the repeat).

  A lease lost with the batch means the take that formed it is gone: a failover rolled Redis back to
  before it, and the batch's events wait again. Its parts went out, so while no replica holds the
  session and nothing was numbered since the batch was taken, the take is applied again here (its
  events leave the reply, the lease is taken back) and the batch is recorded as usual: nothing is
  sent twice and no callback number is used again. A replica that took the session meanwhile formed
  a batch of its own from the events, or went on with the session: 0, and nothing is changed.
]]
--- @include "seal"
--- @include "take-batch"
--- @include "close-reply"
local function takeNext()
  return takeBatchAfter(1,
    {KEYS[4], KEYS[2], KEYS[5], KEYS[3], KEYS[6], KEYS[7]},
    {ARGV[1], ARGV[2], ARGV[19], ARGV[13], ARGV[12], ARGV[20], ARGV[14]})
end
local holder = redis.call('GET', KEYS[2])
if holder ~= ARGV[1] then
  if redis.call('HEXISTS', KEYS[1], 'batch') == 1 then return {0} end
  local last = tonumber(ARGV[16])
  local n = redis.call('HMGET', KEYS[3], 'seq', 'final')
  local unchanged = ((n[1] or '0') .. '|' .. (n[2] or '1')) == ARGV[17]
  if not holder and unchanged and redis.call('HGET', KEYS[1], 'passed') ~= '1'
    and tonumber(redis.call('HGET', KEYS[1], 'attempt') or '-1') == tonumber(ARGV[15]) then
    local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
    for seq = nxt, last do
      local seal = redis.call('HGET', KEYS[1], 'e:' .. seq)
      if seal then
        local count = sealParts(seal)
        for i = 0, count - 1 do redis.call('HDEL', KEYS[1], 'p:' .. seq .. ':' .. i) end
        redis.call('HDEL', KEYS[1], 'e:' .. seq)
      end
    end
    if last >= nxt then redis.call('HSET', KEYS[1], 'next', last + 1) end
    redis.call('HDEL', KEYS[1], 'gap')
    redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  else
    return {0}
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[1], 'batch', 'progress', 'bts')
redis.call('HSET', KEYS[1], 'chunks', ARGV[3], 'open', ARGV[4], 'last', ARGV[5])
if ARGV[10] == '1' then redis.call('HSET', KEYS[1], 'final', '1') end
if ARGV[18] ~= '' then redis.call('HSET', KEYS[1], 'sequence', ARGV[18]) end
if ARGV[6] == '1' then closeReply(KEYS[1]) end
redis.call('HSET', KEYS[3], 'seq', ARGV[7], 'final', ARGV[8])
redis.call('PEXPIRE', KEYS[3], ARGV[9])

-- Whether `take` would find something now. Only the plain cases are decided here; anything else
-- (another reply waiting, a gap, a stall) is left to `take`.
if ARGV[6] == '1' then
  redis.call('ZREM', KEYS[4], ARGV[11])
  if redis.call('ZCARD', KEYS[4]) > 0 then return takeNext() end
  redis.call('ZREM', KEYS[5], ARGV[12])
  redis.call('DEL', KEYS[2])
  return {2}
end
local oldest = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
if oldest ~= ARGV[11] then return takeNext() end
local st = redis.call('HMGET', KEYS[1], 'next', 'seen')
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 2) == 'e:' then return takeNext() end
end
if not st[1] or not st[2] or tonumber(ARGV[13]) - tonumber(st[2]) >= tonumber(ARGV[14]) then return takeNext() end
-- The reply waits for its next event: nothing after it may go out.
redis.call('DEL', KEYS[2])
return {2}
