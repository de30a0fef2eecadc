import type { Platform } from '@conveyor/platform-kit';
import { QqOfficialAdapter } from './adapter.js';
import { QqOfficialConfigSchema, type QqOfficialConfig } from './config.js';
import { qqOfficialConnection } from './connection.js';
import { qqOfficialInbound } from './inbound.js';

/**
 * QQ Official Bot API (QQ 开放平台): a bot receives at its webhook `/bots/{id}` (Ed25519-signed
 * callbacks, LangBot's way) or, with `enable-webhook` off, over the WebSocket gateway the gateway
 * service holds. Replies go out over HTTP from the dispatcher either way, whole.
 */
export const qqOfficialPlatform: Platform<QqOfficialConfig> = {
  name: 'qqofficial',
  botConfigSchema: QqOfficialConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: qqOfficialInbound,
  connection: qqOfficialConnection,
  outbound: (deps) => new QqOfficialAdapter(deps),
};
