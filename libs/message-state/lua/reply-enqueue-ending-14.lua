--[[
  `reply-enqueue` for the run's last event, ending the query's session turn and forgetting its run's
  attempts in the same step when the event is stored (as `reply-deliver-ending` does, for a replica
  already sending the session). The same slot condition: a single Redis or a Sentinel set's master
  only.

  KEYS[1..3]  as `reply-enqueue`'s KEYS[1..3]
  KEYS[4..12] as `session-release`'s KEYS[1..9]
  KEYS[13]    the query's run attempt counter                 redisKeys.runAttempts(queryId)
  KEYS[14]    the span of its latest traced attempt           redisKeys.runAttemptSpan(queryId)

  ARGV[1..8]   as `reply-enqueue`'s ARGV[1..8]
  ARGV[9..13]  as `session-release`'s ARGV[1..5]
  ARGV[14..]   the parts, JSON, in order

  Returns what `reply-enqueue` returns.
]]
--- @include "enqueue-event"
--- @include "end-session-turn"
--- @include "forget-run-attempts"
local stored = enqueueEvent(KEYS, ARGV, 14)
if stored == 1 then
  endSessionTurn(
    {KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12]},
    {ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13]})
  forgetRunAttempts(KEYS[13], KEYS[14])
end
return stored
