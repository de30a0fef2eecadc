import type { Platform } from '@conveyor/platform-kit';
import { AdapterConfigSchema, type AdapterConfig } from './adapter-config.js';
import { HttpBotAdapter } from './adapter.js';

export const HTTP_BOT = 'http-bot';

/**
 * LangBot's HTTP-bot protocol. Its inbound is the ingress' own `/bots/{bot_uuid}` protocol (push,
 * `/sync`, `/reset`, LangBot's error envelope), served by parseInboundRequest and the ingress' bots
 * route rather than the generic webhook, since `/sync` holds the call open for the reply.
 */
export const httpBotPlatform: Platform<AdapterConfig> = {
  name: HTTP_BOT,
  botConfigSchema: AdapterConfigSchema,
  configurable: true,
  streamsByDefault: true,
  outbound: (deps) =>
    new HttpBotAdapter({ redis: deps.redis, prefix: deps.prefix, topology: deps.topology, nc: deps.nc, configs: deps.configs, logger: deps.logger }),
};
