import { GatewayRelayAdapter } from '@conveyor/gateway';
import type { Platform } from '@conveyor/platform-kit';
import { KookConfigSchema, type KookConfig } from './config.js';
import { kookConnection } from './connection.js';

/**
 * KOOK (开黑啦): the bot's WebSocket connection mode; the gateway service holds it (one replica per
 * bot) and the dispatcher's replies travel to that replica, which posts them as KMarkdown. Replies
 * go out whole.
 */
export const kookPlatform: Platform<KookConfig> = {
  name: 'kook',
  botConfigSchema: KookConfigSchema,
  configurable: true,
  streamsByDefault: false,
  connection: kookConnection,
  outbound: (deps) => new GatewayRelayAdapter('kook', { nc: deps.nc, topology: deps.topology, logger: deps.logger }),
};
