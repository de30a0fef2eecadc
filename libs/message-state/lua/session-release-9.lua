--[[
  Frees the session lease and the pipeline slot of a query and takes it out of the queue; safe to run
  any number of times. With ARGV[2] = '1' the query is also remembered as finished, so a redelivered
  copy of it cannot take the session again, and what was merged into it is forgotten. With ARGV[5] =
  '1' the query's count in its chat's rate window is taken back: admission counted it, and it ended
  before the rate-limit stage (a group message not addressed to the bot, a filtered one).

  KEYS[1] the session's waiting queries (zset by stream sequence)  redisKeys.sessionQueue
  KEYS[2] the session lease (holder: query id)                      redisKeys.sessionLease
  KEYS[3] the session's shard of the pipeline slots (zset: query id → expiry)  redisKeys.pipelineSlots(session)
  KEYS[4] first-seen times of waiting queries (hash)                redisKeys.sessionFirstSeen
  KEYS[5] last-seen times of waiting queries (hash)                 redisKeys.sessionLastSeen
  KEYS[6] queries whose reply ended (zset: query id → time)         redisKeys.sessionFinished
  KEYS[7] envelopes stashed for aggregation (hash: query id → JSON) redisKeys.sessionAggregatePending
  KEYS[8] envelopes merged into this query (list)                   redisKeys.sessionAggregateMerged
  KEYS[9] the rate window bucket that counted the query (the session lease again when ARGV[5] is '0')

  ARGV[1] query id
  ARGV[2] '1' when the query finished (its reply ended), '0' when it only gives the session up
  ARGV[3] how long finished queries are remembered, ms
  ARGV[4] the channel told when something was freed                 redisKeys.sessionFreedChannel
  ARGV[5] '1' to take the query's count out of KEYS[9]

  Returns 1 when the query held the lease. When it held the lease or a pipeline slot, or waited in the
  queue (a waiter behind it may now head it), KEYS[2] is published on ARGV[4]: queries waiting for
  this session or for a slot ask again at once.
]]
--- @include "end-session-turn"
return endSessionTurn(KEYS, ARGV)
