import { GatewayRelayAdapter } from '@conveyor/gateway';
import type { Platform } from '@conveyor/platform-kit';
import { SatoriConfigSchema, type SatoriConfig } from './config.js';
import { satoriConnection } from './connection.js';

/**
 * Satori (the protocol Koishi, Chronocat and others serve): the gateway service holds the bot's event
 * WebSocket (one replica per bot) and the dispatcher's replies travel to that replica, which posts
 * them with `message.create`. Replies go out whole.
 */
export const satoriPlatform: Platform<SatoriConfig> = {
  name: 'satori',
  botConfigSchema: SatoriConfigSchema,
  configurable: true,
  streamsByDefault: false,
  connection: satoriConnection,
  outbound: (deps) => new GatewayRelayAdapter('satori', { nc: deps.nc, topology: deps.topology, logger: deps.logger }),
};
