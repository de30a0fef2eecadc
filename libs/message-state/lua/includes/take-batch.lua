--[[
  takeBatch(K, A): the next batch of a session's replies for the replica holding (or now taking) the
  session's sender lease. K and A are laid out as `reply-take`'s KEYS and ARGV (see there), and so is
  what it returns.
]]
--- @include "seal"
--- @include "close-reply"
local function takeBatch(K, A)
  -- Parts one event can produce at most (a reply item and a notice, each wrapped): numbering headroom after a loss.
  local PARTS_PER_EVENT_BOUND = 8
  local holder = redis.call('GET', K[2])
  if holder and holder ~= A[1] then return {'busy'} end
  redis.call('SET', K[2], A[1], 'PX', A[2])
  local now = tonumber(A[4])
  local max = tonumber(A[3])
  local skipped = 0

  -- Replies passed over because a later reply of the session went on (see below): their turn ended.
  local passed = {}

  local function found(q, key)
    local r = redis.call('HMGET', key, 'batch', 'progress', 'bts', 'chunks', 'open', 'last', 'sequence')
    local s = redis.call('HMGET', K[4], 'seq', 'final')
    for _, p in ipairs(passed) do redis.call('HSET', K[5] .. p, 'passed', '1') end
    local out = {'batch', q, r[1], r[2] or '0', r[3] or A[4], r[4] or '0', r[5] or '0', r[6] or '', s[1] or '0', s[2] or '1', redis.call('EXISTS', K[6]), r[7] or '0', skipped + #passed}
    for _, p in ipairs(passed) do out[#out + 1] = p end
    return out
  end

  -- Whether a reply after `q` in the session has an event stored (or a batch being sent).
  local function later_ready(q)
    for _, other in ipairs(redis.call('ZRANGEBYSCORE', K[1], redis.call('ZSCORE', K[1], q), '+inf', 'LIMIT', 0, 32)) do
      if other ~= q then
        for _, field in ipairs(redis.call('HKEYS', K[5] .. other)) do
          if field == 'batch' or string.sub(field, 1, 2) == 'e:' then return true end
        end
      end
    end
    return false
  end

  for _, q in ipairs(redis.call('ZRANGE', K[1], 0, 31)) do
    local key = K[5] .. q
    if redis.call('HEXISTS', key, 'batch') == 1 then return found(q, key) end
    local st = redis.call('HMGET', key, 'next', 'closed', 'seen', 'gap')
    if st[2] == '1' or (not st[1] and not st[3]) then
      -- Ended, or its state expired: it holds nothing back.
      redis.call('ZREM', K[1], q)
    else
      local nxt = tonumber(st[1] or '0')
      local out = {}
      local n = 0
      for _ = 1, 2 do
        while n < max do
          local seal = redis.call('HGET', key, 'e:' .. nxt)
          if not seal then break end
          local count, entry = sealParts(seal)
          for i = 0, count - 1 do
            local pk = 'p:' .. nxt .. ':' .. i
            local part = redis.call('HGET', key, pk)
            if part then table.insert(out, part) end
            redis.call('HDEL', key, pk)
          end
          table.insert(out, entry)
          redis.call('HDEL', key, 'e:' .. nxt)
          nxt = nxt + 1
          n = n + 1 + count
        end
        if n > 0 then break end
        -- The next event is missing. When later events are there and the gap has lasted, the event was
        -- lost (its publisher died, or Redis lost the state): continue after it.
        local later
        for _, field in ipairs(redis.call('HKEYS', key)) do
          if string.sub(field, 1, 2) == 'e:' then
            local s = tonumber(string.sub(field, 3))
            if s > nxt and (not later or s < later) then later = s end
          end
        end
        if not later then break end
        if not st[4] then
          redis.call('HSET', key, 'gap', now)
          break
        end
        if now - tonumber(st[4]) < tonumber(A[6]) then break end
        -- The skipped events may have gone out before Redis lost them (a restart lost the reply's state,
        -- or a failover rolled it back to before them), with callback numbers Redis no longer has: up to
        -- a few per event above what it recorded. Continue above all of them, so no later part repeats a
        -- number (the integrator's idempotency key) with another body.
        local numbering = redis.call('HMGET', K[4], 'seq', 'final')
        local base = numbering[2] == '1' and 0 or tonumber(numbering[1] or '0')
        base = math.max(base, tonumber(redis.call('HGET', key, 'sequence') or '0'))
        redis.call('HSET', K[4], 'seq', base + (later - nxt) * PARTS_PER_EVENT_BOUND, 'final', '0')
        skipped = skipped + (later - nxt)
        nxt = later
        redis.call('HDEL', key, 'gap')
      end
      if n > 0 then
        redis.call('HDEL', key, 'gap')
        redis.call('HSET', key, 'next', nxt, 'batch', '[' .. table.concat(out, ',') .. ']', 'progress', 0, 'bts', now)
        return found(q, key)
      end
      local quiet = now - tonumber(st[3] or '0')
      if quiet >= tonumber(A[7]) then
        -- No event for the whole stall time: its run is gone without a trace; later replies go on.
        closeReply(key)
        redis.call('ZREM', K[1], q)
        skipped = skipped + 1
      elseif quiet < tonumber(A[6]) or not later_ready(q) then
        -- The oldest open reply is waiting for its next event: nothing after it may go out.
        redis.call('DEL', K[2])
        return {'idle', skipped}
      else
        -- A later reply of the session has events, so its query held the session lease after this one:
        -- this reply's turn ended, and Redis lost what recorded it (a failover's partial loss rolled the
        -- reply back to before its last events, already sent and acknowledged). Past the gap it holds
        -- the later replies back no more; it stays open for events that may still come, until the stall.
        -- Reported (and marked) only with a batch: a take that ends idle leaves it for the next one.
        if redis.call('HGET', key, 'passed') ~= '1' then passed[#passed + 1] = q end
      end
    end
  end
  if redis.call('ZCARD', K[1]) == 0 then redis.call('ZREM', K[3], A[5]) end
  redis.call('DEL', K[2])
  return {'idle', skipped}
end

--[[
  takeBatchAfter(code, K, A): `code`, then what takeBatch(K, A) returns, in one reply: how a fused
  script answers when its own step went through and the take followed.
]]
local function takeBatchAfter(code, K, A)
  local out = {code}
  for _, v in ipairs(takeBatch(K, A)) do out[#out + 1] = v end
  return out
end
