/** Bot settings as the adapters need them, cached briefly so a stream of parts is not a stream of queries. */
export type BotConfigLookup = (botId: string) => Promise<{ adapter: string; adapterConfig: unknown } | null>;

export class CachedBotConfigs {
  private readonly cache = new Map<string, { value: { adapter: string; adapterConfig: unknown } | null; expires: number }>();

  constructor(
    private readonly lookup: BotConfigLookup,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  async get(botId: string) {
    const hit = this.cache.get(botId);
    if (hit && hit.expires > Date.now()) return hit.value;
    const value = await this.lookup(botId);
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(botId, { value, expires: Date.now() + this.ttlMs });
    return value;
  }
}
