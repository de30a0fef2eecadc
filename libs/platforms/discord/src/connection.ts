import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import type { DiscordConfig } from './config.js';
import { chainToContent, DiscordMessage, messageToQuery } from './convert.js';
import { DiscordGatewaySocket, type DiscordSession } from './gateway.js';
import { DiscordApiError, DiscordRest, splitContent } from './rest.js';

/** Inbound messages of one connection waiting to be published; past this a burst is refused, not buffered without bound. */
const MAX_QUEUED_INBOUND = 1_000;
/** Bots whose last session this process remembers for a RESUME. */
const MAX_SESSIONS = 10_000;
/** DM channels remembered per connection (user id → channel id). */
const MAX_DM_CHANNELS = 4_096;
/** Channel names as the OneBot group names are cached: an hour when read, a minute when the lookup failed. */
const CHANNEL_NAME_TTL_MS = 3_600_000;
const CHANNEL_NAME_MISS_TTL_MS = 60_000;
const CHANNEL_NAME_CACHE = 4_096;
/** A channel name lookup must not hold up the chat for long. */
const CHANNEL_NAME_TIMEOUT_MS = 2_000;

/**
 * The last session of each bot this replica held, so reconnecting after a dropped socket resumes
 * (missed events replayed by Discord) instead of identifying anew. A replica taking a bot over has
 * none and identifies; Discord then delivers from that moment on.
 */
const sessions = new Map<string, DiscordSession>();

function remember(botId: string, session: DiscordSession | undefined) {
  sessions.delete(botId);
  if (!session) return;
  if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value ?? '');
  sessions.set(botId, session);
}

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
    let queued = 0;
    let chain: Promise<void> = Promise.resolve();
    let socket: DiscordGatewaySocket | undefined;
    const resume = sessions.get(deps.botId);
    const onMessage = (raw: unknown) => {
      const parsed = DiscordMessage.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return deps.malformed(`MESSAGE_CREATE: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
      }
      const m = parsed.data;
      const self = socket?.botUserId ?? resume?.botUserId ?? '';
      if (m.author.bot || m.author.id === self) return;
      if (queued >= MAX_QUEUED_INBOUND) return deps.malformed('inbound queue full; message dropped', { messageId: m.id });
      queued++;
      chain = chain
        .then(async () => deps.publish(messageToQuery(m, self, deps.botId, deps.config['enable-stream-reply'], m.guild_id !== undefined ? await channelName(m.channel_id) : '')))
        .catch((err: unknown) => deps.logger.warn({ err, botId: deps.botId, messageId: m.id }, 'Discord message not published'))
        .finally(() => void queued--);
    };
    const connect = (withResume: DiscordSession | undefined) => DiscordGatewaySocket.connect({
      url,
      token: deps.config.token,
      ...(withResume ? { resume: withResume } : {}),
      onDispatch: (event, data) => {
        if (event === 'MESSAGE_CREATE') onMessage(data);
      },
      onMalformed: (reason) => deps.malformed(reason),
    });
    try {
      socket = await connect(resume);
    } catch (err) {
      sessions.delete(deps.botId);
      throw err;
    }
    const open = socket;
    deps.logger.info({ botId: deps.botId, resumed: resume !== undefined, botUserId: open.botUserId }, 'Discord Gateway session ready');
    const dms = new Map<string, string>();
    const ended = open.ended.then((reason) => {
      remember(deps.botId, open.resumable());
      return reason;
    });
    return {
      ended,
      close: async (reason) => {
        await open.close(reason);
        remember(deps.botId, open.resumable());
      },
      send: (route, message, onWritten) => sendWhole(rest, route, message, dms, onWritten),
    };
  },
};
