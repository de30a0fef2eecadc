import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { ConnectionStateKeeper } from '@conveyor/gateway';
import { PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import type { DiscordConfig } from './config.js';
import { chainToContent, DiscordMessage, messageToQuery } from './convert.js';
import { DiscordGatewaySocket, DiscordSession } from './gateway.js';
import { DiscordApiError, DiscordRest, splitContent } from './rest.js';

/** Inbound messages of one connection waiting to be published; past this a burst is refused, not buffered without bound. */
const MAX_QUEUED_INBOUND = 1_000;
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
    const state = deps.state(DiscordSession);
    const resume = await state.get();
    const keeper = new ConnectionStateKeeper<DiscordSession>(state, (err) => deps.logger.warn({ err, botId: deps.botId }, 'Discord session not stored; the next connection may identify anew'));
    /** The session the events belong to, and the sequence number up to which every event was handled (its message published). */
    let session: DiscordSession | undefined = resume;
    let handledSeq: number | null = resume?.seq ?? null;
    let latestSeq: number | null = handledSeq;
    const handled = (seq: number | null) => {
      if (seq === null || !session || (handledSeq !== null && seq <= handledSeq)) return;
      handledSeq = seq;
      keeper.soon({ ...session, seq });
    };
    const lastWord = () => (session ? { ...session, seq: handledSeq } : null);
    let queued = 0;
    let chain: Promise<void> = Promise.resolve();
    /** Queues a message for publishing; false when it is not one to publish (nothing waits for it). */
    const onMessage = (raw: unknown, seq: number | null): boolean => {
      const parsed = DiscordMessage.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        deps.malformed(`MESSAGE_CREATE: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
        return false;
      }
      const m = parsed.data;
      const self = session?.botUserId ?? '';
      if (m.author.bot || m.author.id === self) return false;
      if (queued >= MAX_QUEUED_INBOUND) {
        deps.malformed('inbound queue full; message dropped', { messageId: m.id });
        return false;
      }
      queued++;
      chain = chain
        .then(async () => deps.publish(messageToQuery(m, self, deps.botId, deps.config['enable-stream-reply'], m.guild_id !== undefined ? await channelName(m.channel_id) : '')))
        .catch((err: unknown) => deps.logger.warn({ err, botId: deps.botId, messageId: m.id }, 'Discord message not published'))
        .finally(() => {
          queued--;
          // Messages are published in order: with none waiting, every event seen so far is handled.
          handled(queued === 0 ? latestSeq : seq);
        });
      return true;
    };
    let open: DiscordGatewaySocket;
    try {
      open = await DiscordGatewaySocket.connect({
        url,
        token: deps.config.token,
        ...(resume ? { resume } : {}),
        onDispatch: (event, data, seq) => {
          latestSeq = seq;
          if (event === 'MESSAGE_CREATE' && onMessage(data, seq)) return;
          if (queued === 0) handled(seq);
        },
        onSession: (begun) => {
          session = begun;
          if (!begun) {
            handledSeq = null;
            latestSeq = null;
            void keeper.now(null);
            return;
          }
          handledSeq ??= begun.seq;
          void keeper.now({ ...begun, seq: handledSeq });
        },
        onMalformed: (reason) => deps.malformed(reason),
      });
    } catch (err) {
      // A session that could not be resumed (or begun) is not tried again: the next connection identifies.
      await keeper.finish(null);
      throw err;
    }
    deps.logger.info({ botId: deps.botId, resumed: resume !== undefined && open.resumable()?.sessionId === resume.sessionId, botUserId: open.botUserId }, 'Discord Gateway session ready');
    const dms = new Map<string, string>();
    const ended = open.ended.then(async (reason) => {
      await keeper.finish(lastWord());
      return reason;
    });
    return {
      ended,
      close: async (reason) => {
        await open.close(reason);
        await keeper.finish(lastWord());
      },
      send: (route, message, onWritten) => sendWhole(rest, route, message, dms, onWritten),
    };
  },
};
