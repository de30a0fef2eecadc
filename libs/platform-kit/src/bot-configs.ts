/** A bot's settings as the outbound adapters need them. */
export interface BotConfig {
  adapter: string;
  adapterConfig: unknown;
}

/**
 * Where an adapter reads a bot's settings on each part it sends. The dispatcher passes its
 * configuration read model (cached, dropped on `config.changed`), so a stream of parts is not a
 * stream of queries.
 */
export interface BotConfigs {
  get(botId: string): Promise<BotConfig | null>;
}
