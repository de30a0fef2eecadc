import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { openResumableGateway } from '@conveyor/gateway';
import { PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import type { DiscordConfig } from './config.js';
import { chainToContent, DiscordMessage, messageToQuery } from './convert.js';
import { discordGatewayProtocol } from './gateway.js';
import { DiscordApiError, DiscordRest, splitContent } from './rest.js';

/** DM channels remembered per connection (user id → channel id). */
const MAX_DM_CHANNELS = 4_096;
/** Channel names as the OneBot group names are cached: an hour when read, a minute when the lookup failed. */
const CHANNEL_NAME_TTL_MS = 3_600_000;
const CHANNEL_NAME_MISS_TTL_MS = 60_000;
const CHANNEL_NAME_CACHE = 4_096;
/** A channel name lookup must not hold up the chat for long. */
const CHANNEL_NAME_TIMEOUT_MS = 2_000;

export function restOf(config: DiscordConfig, logger?: ConnectionDeps<DiscordConfig>['logger'], botId?: string): DiscordRest {
  return new DiscordRest({
    baseUrl: config.api_base_url,
    token: config.token,
    onRateLimited: (route, retryAfterMs) => logger?.warn({ botId, route, retryAfterMs }, 'Discord rate limit; waiting as told'),
  });
}

/** Where a route's reply goes: the guild channel itself, or the DM channel with the person. */
export async function channelOf(rest: DiscordRest, route: ReplyRoute, dms?: Map<string, string>): Promise<string> {
  if (route.launcherType === 'group') return route.sessionId;
  const known = dms?.get(route.sessionId);
  if (known) return known;
  const id = await rest.dmChannel(route.sessionId);
  if (dms) {
    if (dms.size >= MAX_DM_CHANNELS) dms.delete(dms.keys().next().value ?? '');
    dms.set(route.sessionId, id);
  }
  return id;
}

/** Sends one whole reply: split at Discord's 2,000 characters, the first piece a reply to the user's message. */
export async function sendWhole(rest: DiscordRest, route: ReplyRoute, message: MessageChain, dms?: Map<string, string>, onWritten?: () => void): Promise<{ messageId?: string }> {
  const content = chainToContent(message);
  if (!content) return {};
  try {
    const channel = await channelOf(rest, route, dms);
    let first: string | undefined;
    for (const [i, piece] of splitContent(content).entries()) {
      const id = await rest.createMessage(channel, piece, i === 0 ? route.replyTo : undefined, i === 0 ? onWritten : undefined);
      first ??= id;
    }
    return first !== undefined ? { messageId: first } : {};
  } catch (err) {
    if (err instanceof DiscordApiError && err.permanent) throw new PlatformRejectedError(err.message);
    throw err;
  }
}

/**
 * Discord: the gateway replica holding the bot keeps its Gateway WebSocket (MESSAGE_CREATE in) and
 * sends replies over REST. The bot's own messages and other bots' are ignored.
 */
export const discordConnection: PlatformConnection<DiscordConfig> = {
  async open(deps) {
    const rest = restOf(deps.config, deps.logger, deps.botId);
    const url = await rest.gatewayUrl();
    const names = new Map<string, { name: string; until: number }>();
    const channelName = async (channelId: string): Promise<string> => {
      const hit = names.get(channelId);
      if (hit && hit.until > Date.now()) return hit.name;
      const name = await Promise.race([
        rest.channelName(channelId).catch(() => ''),
        new Promise<string>((resolve) => setTimeout(() => resolve(''), CHANNEL_NAME_TIMEOUT_MS).unref()),
      ]);
      names.delete(channelId);
      if (names.size >= CHANNEL_NAME_CACHE) names.delete(names.keys().next().value ?? '');
      names.set(channelId, { name, until: Date.now() + (name ? CHANNEL_NAME_TTL_MS : CHANNEL_NAME_MISS_TTL_MS) });
      return name;
    };
    // The session is kept in the connection's fenced state, so the next connection of the bot resumes
    // it (Discord replays what it missed) whether it runs on this replica or on one taking the bot over.
    const open = await openResumableGateway({
      deps,
      platform: 'Discord',
      url,
      ...discordGatewayProtocol(deps.config.token),
      onDispatch: (event, data, session) => {
        if (event !== 'MESSAGE_CREATE') return undefined;
        const parsed = DiscordMessage.safeParse(data);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          deps.malformed(`MESSAGE_CREATE: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
          return undefined;
        }
        const m = parsed.data;
        const self = session?.botUserId ?? '';
        if (m.author.bot || m.author.id === self) return undefined;
        return {
          messageId: m.id,
          publish: async () => deps.publish(messageToQuery(m, self, deps.botId, deps.config['enable-stream-reply'], m.guild_id !== undefined ? await channelName(m.channel_id) : '')),
        };
      },
    });
    deps.logger.info({ botId: deps.botId, resumed: open.resumed, botUserId: open.socket.resumable()?.botUserId ?? '' }, 'Discord Gateway session ready');
    const dms = new Map<string, string>();
    return {
      ended: open.ended,
      close: (reason) => open.close(reason),
      send: (route, message, onWritten) => sendWhole(rest, route, message, dms, onWritten),
    };
  },
};
