import type { Redis } from 'ioredis';
import { evalScript } from '@conveyor/redis-scripts';

/**
 * LangBot's per-session callback numbering (HTTP-bot protocol §8.4: restart at 1 after a final
 * callback, else count up), kept in Redis so that every dispatcher replica continues the same count.
 */
const NEXT_SEQUENCE = `
local s = redis.call('HMGET', KEYS[1], 'seq', 'final')
local seq = tonumber(s[1]) or 0
if s[2] == false or s[2] == '1' then seq = 1 else seq = seq + 1 end
redis.call('HSET', KEYS[1], 'seq', seq, 'final', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return seq`;

/** Idle sessions forget their count, as LangBot's does after its idle timeout. */
const STATE_TTL_SECONDS = 3600;

export class SessionSequence {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async next(botId: string, sessionId: string, isFinal: boolean): Promise<number> {
    const key = `${this.prefix}:seq:${botId}:${sessionId}`;
    return Number(await evalScript(this.redis, NEXT_SEQUENCE, 1, key, isFinal ? '1' : '0', STATE_TTL_SECONDS));
  }
}
