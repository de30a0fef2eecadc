--[[
  `reply-deliver` for the run's last event, ending the query's session turn in the same step when the
  event is stored (`session-release` as the query finished) and forgetting its run's attempts
  (`forget-run-attempts`): the reply's last event is in Redis, so
  the rest of the reply goes out before any later reply of the session (`take` serves the oldest reply
  first), and the session's next message need not wait for another round trip. Its keys span the
  session's hash slot and the reply session's, so it runs only where one server holds every slot (a
  single Redis or a Sentinel set's master); on a Redis Cluster the turn ends in a script of its own.

  KEYS[1..7]  as `reply-deliver`'s KEYS[1..7]
  KEYS[8..16] as `session-release`'s KEYS[1..9]
  KEYS[17]    the query's run attempt counter                 redisKeys.runAttempts(queryId)
  KEYS[18]    the span of its latest traced attempt           redisKeys.runAttemptSpan(queryId)

  ARGV[1..13]  as `reply-deliver`'s ARGV[1..13]
  ARGV[14..18] as `session-release`'s ARGV[1..5]
  ARGV[19..]   the parts, JSON, in order

  Returns what `reply-deliver` returns.
]]
--- @include "enqueue-event"
--- @include "take-batch"
--- @include "end-session-turn"
--- @include "forget-run-attempts"
local stored = enqueueEvent(KEYS, ARGV, 19)
if stored ~= 1 then return {stored} end
endSessionTurn(
  {KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16]},
  {ARGV[14], ARGV[15], ARGV[16], ARGV[17], ARGV[18]})
forgetRunAttempts(KEYS[17], KEYS[18])
return takeBatchAfter(1,
  {KEYS[2], KEYS[4], KEYS[3], KEYS[5], KEYS[6], KEYS[7]},
  {ARGV[9], ARGV[10], ARGV[11], ARGV[3], ARGV[6], ARGV[12], ARGV[13]})
