--[[
  forgetRunAttempts(counter, span): deletes a finished query's run attempt counter and its kept span
  (`run-next-attempt`'s KEYS). Once the reply's last event is stored, no later attempt can add to the
  reply: a redelivered run finds the query finished in the query log and publishes its recorded last
  event again under the recorded number, and an event of any other attempt is refused (superseded, or
  the reply has ended). Kept until then, every query would hold them for their whole TTL (a day for
  the counter), which at a few hundred messages a second is gigabytes of Redis.
]]
local function forgetRunAttempts(counter, span)
  redis.call('DEL', counter, span)
end
