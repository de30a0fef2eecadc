--[[
  Stores what one runner event produced and, when it was stored, takes the session's next batch for
  this replica in the same step: `reply-enqueue` then `reply-take`, one round trip where a replica
  that is not already sending the session would make two back to back with nothing between them.

  KEYS[1] the reply's state hash            redisKeys.reply(session, queryId)
  KEYS[2] the session's replies (zset)       redisKeys.replySessionReplies(session)
  KEYS[3] sessions with work (zset)          redisKeys.replyActiveSessions(session)
  KEYS[4] the session's sender lease         redisKeys.replySessionSender(session)
  KEYS[5] the session's callback numbering   redisKeys.replySessionSequence(session)
  KEYS[6] the common start of the session's reply keys  redisKeys.replyPrefix(session) (as `reply-take`'s KEYS[5])
  KEYS[7] the session's held-call mark       redisKeys.replyHeldCallMark(session)

  ARGV[1..8] as `reply-enqueue`'s ARGV[1..8] (attempt, seq, now, state TTL, query id, session member,
             seal, terminal)
  ARGV[9]  lease token of this replica
  ARGV[10] lease TTL, ms
  ARGV[11] most entries in one batch
  ARGV[12] gap, ms
  ARGV[13] stall, ms
  ARGV[14..] the parts, JSON, in order

  Returns {enqueue result} when the event was not stored (0 duplicate, -1 superseded, -2 ended), else
  {1, take result...}: the take's reply (`reply-take`) follows the 1.
]]
--- @include "enqueue-event"
--- @include "take-batch"
local stored = enqueueEvent(KEYS, ARGV, 14)
if stored ~= 1 then return {stored} end
return takeBatchAfter(1,
  {KEYS[2], KEYS[4], KEYS[3], KEYS[5], KEYS[6], KEYS[7]},
  {ARGV[9], ARGV[10], ARGV[11], ARGV[3], ARGV[6], ARGV[12], ARGV[13]})
