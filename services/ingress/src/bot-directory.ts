import { Inject, Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { dropRowsOf, INFRA } from '@conveyor/service-kit';
import type { IngressInfra } from './env.js';

export interface BotEntry {
  id: string;
  adapter: string;
  adapterConfig: unknown;
  enabled: boolean;
}

const MAX_ENTRIES = 10_000;

/** Bots by id, read through a cache (dropped on `ConfigChanged`) so a webhook burst does not become a Postgres burst. */
@Injectable()
export class BotDirectory {
  /** Boxed, since the cache holds no null: a bot id that does not exist is remembered too. */
  private readonly cache: LRUCache<string, { entry: BotEntry | null }> | undefined;

  constructor(@Inject(INFRA) private readonly infra: IngressInfra) {
    const ttl = infra.env.BOT_CACHE_SECONDS * 1000;
    // BOT_CACHE_SECONDS=0 means no cache (an LRUCache with ttl 0 would keep entries for ever).
    this.cache = ttl > 0 ? new LRUCache({ max: MAX_ENTRIES, ttl, fetchMethod: async (botId) => ({ entry: await this.load(botId) }) }) : undefined;
    if (this.cache) infra.configCaches.register(dropRowsOf('bot', this.cache));
  }

  async find(botId: string): Promise<BotEntry | null> {
    if (!this.cache) return this.load(botId);
    return (await this.cache.fetch(botId))?.entry ?? null;
  }

  private load(botId: string): Promise<BotEntry | null> {
    return this.infra.prisma.bot.findUnique({
      where: { id: botId },
      select: { id: true, adapter: true, adapterConfig: true, enabled: true },
    });
  }
}
