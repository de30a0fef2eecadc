import type { Platform } from '@conveyor/platform-kit';
import { DiscordAdapter } from './adapter.js';
import { DiscordConfigSchema, type DiscordConfig } from './config.js';
import { discordConnection } from './connection.js';

/**
 * Discord: no webhook for messages; the gateway service holds the bot's Gateway WebSocket (one
 * replica per bot). Whole replies travel to that replica; streamed replies are edited in place.
 */
export const discordPlatform: Platform<DiscordConfig> = {
  name: 'discord',
  botConfigSchema: DiscordConfigSchema,
  configurable: true,
  streamsByDefault: false,
  connection: discordConnection,
  outbound: (deps) => new DiscordAdapter(deps),
};
