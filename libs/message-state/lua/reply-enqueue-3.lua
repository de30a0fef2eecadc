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
--- @include "enqueue-event"
return enqueueEvent(KEYS, ARGV, 9)
