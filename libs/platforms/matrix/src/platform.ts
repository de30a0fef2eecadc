import type { Platform } from '@conveyor/platform-kit';
import { MatrixAdapter } from './adapter.js';
import { MatrixConfigSchema, type MatrixConfig } from './config.js';
import { matrixConnection } from './connection.js';

/**
 * Matrix: no webhook; the gateway service long-polls the homeserver's `/sync` for the bot (one
 * replica per bot). Replies are sent by the dispatcher over the client-server API; streamed replies
 * are edited in place with `m.replace`.
 */
export const matrixPlatform: Platform<MatrixConfig> = {
  name: 'matrix',
  botConfigSchema: MatrixConfigSchema,
  configurable: true,
  streamsByDefault: false,
  connection: matrixConnection,
  outbound: (deps) => new MatrixAdapter(deps),
};
