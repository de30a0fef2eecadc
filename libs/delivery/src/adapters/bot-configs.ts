import { LRUCache } from 'lru-cache';
import { CONFIG_CACHE_SAFETY_TTL_MS } from '@conveyor/contracts';

/**
 * Bot settings as the adapters need them, cached so a stream of parts is not a stream of queries. The
 * owner drops entries on `ConfigChanged` events; the TTL is only a safety bound.
 */
export interface BotConfig {
  adapter: string;
  adapterConfig: unknown;
}

export type BotConfigLookup = (botId: string) => Promise<BotConfig | null>;

export class CachedBotConfigs {
  /** Boxed, since the cache holds no null: a bot that does not exist is remembered too. */
  private readonly cache: LRUCache<string, { value: BotConfig | null }>;

  constructor(lookup: BotConfigLookup, ttlMs = CONFIG_CACHE_SAFETY_TTL_MS, maxEntries = 10_000) {
    this.cache = new LRUCache({ max: maxEntries, ttl: ttlMs, fetchMethod: async (botId) => ({ value: await lookup(botId) }) });
  }

  async get(botId: string): Promise<BotConfig | null> {
    return (await this.cache.fetch(botId))?.value ?? null;
  }

  delete(botId: string): void {
    this.cache.delete(botId);
  }

  clear(): void {
    this.cache.clear();
  }
}
