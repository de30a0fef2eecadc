import { Inject, Injectable } from '@nestjs/common';
import { INFRA, type Infra } from '@conveyor/service-kit';

export interface BotEntry {
  id: string;
  adapter: string;
  adapterConfig: unknown;
  enabled: boolean;
}

const MAX_ENTRIES = 10_000;

/** Bots by id, read through a short-lived cache so a webhook burst does not become a Postgres burst. */
@Injectable()
export class BotDirectory {
  private readonly cache = new Map<string, { entry: BotEntry | null; expires: number }>();
  private readonly ttlMs: number;

  constructor(@Inject(INFRA) private readonly infra: Infra) {
    this.ttlMs = Number((infra.env as { BOT_CACHE_SECONDS?: number }).BOT_CACHE_SECONDS ?? 5) * 1000;
  }

  async find(botId: string): Promise<BotEntry | null> {
    const hit = this.cache.get(botId);
    if (hit && hit.expires > Date.now()) return hit.entry;
    const row = await this.infra.prisma.bot.findUnique({
      where: { id: botId },
      select: { id: true, adapter: true, adapterConfig: true, enabled: true },
    });
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(botId, { entry: row, expires: Date.now() + this.ttlMs });
    return row;
  }
}
