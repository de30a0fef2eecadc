import { openResumableGateway } from '@conveyor/gateway';
import { PlatformRejectedError, SharedAccessTokens, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { QqApi } from './api.js';
import type { QqOfficialConfig } from './config.js';
import { dispatchToQuery } from './parse.js';

/** PUBLIC_GUILD_MESSAGES | DIRECT_MESSAGE | GROUP_AND_C2C_EVENT: channel @s, guild DMs, group @s and private messages. */
export const QQ_INTENTS = (1 << 30) | (1 << 12) | (1 << 25);

/** Close codes after which connecting again with the same settings cannot work. */
const FATAL_CLOSE: Readonly<Record<number, string>> = {
  4004: 'authentication failed (the access token was refused)',
  4010: 'invalid shard',
  4011: 'too many guilds for one shard',
  4012: 'invalid API version',
  4013: 'invalid intents',
  4014: 'intents not permitted for this bot',
  4914: 'the bot is offline (sandbox only)',
  4915: 'the bot is banned',
};

/**
 * QQ Official over its WebSocket gateway (a bot with `enable-webhook` off): the holder identifies with
 * the app access token and the intents, heartbeats, and dispatches become queries as webhook ones do.
 * The session lives in the connection's fenced state, so the next connection of the bot resumes it
 * (QQ replays what it missed), on this replica or on one taking it over. Replies need no connection:
 * the dispatcher sends them over HTTP.
 */
export const qqOfficialConnection: PlatformConnection<QqOfficialConfig> = {
  holds: (config) => !config['enable-webhook'],
  async open(deps) {
    const tokens = deps.shared ? new SharedAccessTokens(deps.shared.redis, deps.shared.prefix, 'qqofficial') : undefined;
    const api = new QqApi({ config: deps.config, ...(tokens ? { tokens } : {}) });
    const url = await api.gatewayUrl();
    const token = `QQBot ${await api.accessToken()}`;
    const open = await openResumableGateway({
      deps,
      platform: 'QQ',
      url,
      identify: () => ({ token, intents: QQ_INTENTS, shard: [0, 1], properties: { $os: process.platform, $browser: 'conveyor', $device: 'conveyor' } }),
      resumeToken: token,
      fatalClose: FATAL_CLOSE,
      onDispatch: (event, data) => {
        const outcome = dispatchToQuery(event, data, deps.botId);
        if (outcome.kind === 'malformed') deps.malformed(outcome.reason);
        if (outcome.kind !== 'query') return undefined;
        const query = outcome.query;
        return { publish: () => deps.publish(query), messageId: query.dedupId };
      },
    });
    deps.logger.info({ botId: deps.botId, resumed: open.resumed }, 'QQ gateway session ready');
    return {
      ended: open.ended,
      close: (reason) => open.close(reason),
      send: async () => {
        throw new PlatformRejectedError('QQ Official replies are sent by the dispatcher over HTTP, not over the connection');
      },
    } satisfies OpenConnection;
  },
};
