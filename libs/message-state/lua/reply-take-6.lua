--[[
  Takes the next batch of a session's replies for the replica holding (or now taking) the session's
  sender lease. Replies go out strictly one after another: only the oldest reply that has not ended
  is taken from, so a later reply never overtakes an earlier one.

  KEYS[1] the session's replies (zset)     redisKeys.replySessionReplies(session)
  KEYS[2] the session's sender lease        redisKeys.replySessionSender(session)
  KEYS[3] sessions with work (zset)         redisKeys.replyActiveSessions(session)
  KEYS[4] the session's callback numbering  redisKeys.replySessionSequence(session)
  KEYS[5] the common start of the session's reply keys  redisKeys.replyPrefix(session)
          (not a key itself: each waiting reply's hash is it and the query id, and shares its hash tag,
          so the replies this script reads from the session's zset are in the slot of the keys above)
  KEYS[6] the session's held-call mark       redisKeys.replyHeldCallMark(session)

  ARGV[1] lease token of this replica
  ARGV[2] lease TTL, ms
  ARGV[3] most entries in one batch
  ARGV[4] now, ms
  ARGV[5] session member of the active set
  ARGV[6] gap, ms: how long a missing event may hold back the events after it (it was lost)
  ARGV[7] stall, ms: how long a reply with no new event may hold back the session's later replies

  Returns {'busy'} when another replica holds the lease; {'idle', skipped} when nothing is ready (the
  lease is released); or {'batch', queryId, batch JSON, progress, batch time, chunks, open, last,
  callback seq, last callback final, held-call mark (1 set, 0 not), the highest callback sequence the
  reply itself used (0: none recorded), skipped, passed query id...} with
  the lease held. `skipped` counts
  events and replies given up as lost; the passed query ids are open replies passed over (once each)
  because a later reply of the session went on: their session turn ended (the caller ends it again).
]]
--- @include "take-batch"
return takeBatch(KEYS, ARGV)
