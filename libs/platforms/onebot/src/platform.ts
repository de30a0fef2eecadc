import { GatewayRelayAdapter } from '@conveyor/gateway';
import type { Platform } from '@conveyor/platform-kit';
import { OneBotConfigSchema, type OneBotConfig } from './config.js';
import { oneBotConnection } from './connection.js';

/**
 * OneBot v11 (QQ bots through NapCat, Lagrange, go-cqhttp): no webhook; the gateway service holds
 * the bot's WebSocket (one replica per bot) and the dispatcher's replies travel to that replica.
 * OneBot cannot edit a sent message, so replies go out whole.
 */
export const onebotPlatform: Platform<OneBotConfig> = {
  name: 'onebot',
  botConfigSchema: OneBotConfigSchema,
  configurable: true,
  streamsByDefault: false,
  connection: oneBotConnection,
  outbound: (deps) => new GatewayRelayAdapter('onebot', { nc: deps.nc, topology: deps.topology, logger: deps.logger }),
};
