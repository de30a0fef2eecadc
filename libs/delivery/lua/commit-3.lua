--[[
  Records that the batch taken by `take` went out, and what the platform was shown.

  KEYS[1] the reply's state hash            redisKeys.reply(queryId)
  KEYS[2] the session's sender lease         redisKeys.replySessionSender(session)
  KEYS[3] the session's callback numbering   redisKeys.replySessionSequence(session)

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

  Returns 1, or 0 when this replica lost the lease meanwhile (the next holder sends the batch again,
  byte for byte, and the platform's idempotency key absorbs the repeat).
]]
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[1], 'batch', 'progress', 'bts')
redis.call('HSET', KEYS[1], 'chunks', ARGV[3], 'open', ARGV[4], 'last', ARGV[5])
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'closed', '1') end
if ARGV[10] == '1' then redis.call('HSET', KEYS[1], 'final', '1') end
redis.call('HSET', KEYS[3], 'seq', ARGV[7], 'final', ARGV[8])
redis.call('PEXPIRE', KEYS[3], ARGV[9])
return 1
