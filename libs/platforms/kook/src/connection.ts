import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { ConnectionStateKeeper, SequencedInbound } from '@conveyor/gateway';
import { PlatformRejectedError, splitMessageText, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import type { KookConfig } from './config.js';
import { chainToKMarkdown, isMessageEvent, KookMessageEvent, messageToQuery } from './convert.js';
import { KookApiError, KookRest } from './rest.js';
import { KookSession, KookSocket } from './socket.js';

/** KMarkdown messages are split at this many characters; KOOK refuses very long ones. */
export const KOOK_MAX_CONTENT = 4_000;
/** Frames are asked for zlib-compressed, KOOK's default and the smaller on the wire. */
const COMPRESS = true;

export function restOf(config: KookConfig): KookRest {
  return new KookRest({ baseUrl: config.api_base_url, token: config.token });
}

/** Sends one whole reply as KMarkdown: split at 4,000 characters, the first piece quoting the user's message. */
export async function sendWhole(rest: KookRest, route: ReplyRoute, message: MessageChain, onWritten?: () => void): Promise<{ messageId?: string }> {
  const content = chainToKMarkdown(message);
  if (!content) return {};
  try {
    let first: string | undefined;
    for (const [i, piece] of splitMessageText(content, KOOK_MAX_CONTENT).entries()) {
      const quote = i === 0 ? route.replyTo : undefined;
      const written = i === 0 ? onWritten : undefined;
      const id = route.launcherType === 'group'
        ? await rest.createMessage(route.sessionId, piece, quote, written)
        : await rest.createDirectMessage(route.sessionId, piece, quote, written);
      first ??= id;
    }
    return first !== undefined ? { messageId: first } : {};
  } catch (err) {
    if (err instanceof KookApiError && err.permanent) throw new PlatformRejectedError(err.message);
    throw err;
  }
}

/**
 * KOOK: the gateway replica holding the bot keeps its WebSocket (channel and direct messages in) and
 * sends replies over REST. The session (id and the sn handled) is kept in the connection's fenced
 * state, so the next connection of the bot resumes it, on this replica or on one taking it over,
 * and KOOK replays what it missed. The bot's own messages and other bots' are ignored.
 */
export const kookConnection: PlatformConnection<KookConfig> = {
  async open(deps) {
    const rest = restOf(deps.config);
    const me = await rest.me();
    const url = await rest.gatewayUrl(COMPRESS);
    const state = deps.state(KookSession);
    const resume = await state.get();
    const keeper = new ConnectionStateKeeper<KookSession>(state, (err) => deps.logger.warn({ err, botId: deps.botId }, 'KOOK session not stored; the next connection may start a new one'));
    let session: KookSession | undefined = resume;
    let handledSn = resume?.sn ?? 0;
    const inbound = new SequencedInbound({
      onHandled: (sn) => {
        handledSn = sn;
        if (session) keeper.soon({ ...session, sn });
      },
      onFailed: (err) => deps.logger.warn({ err, botId: deps.botId }, 'KOOK message not published'),
    });
    const lastWord = () => (session ? { ...session, sn: handledSn } : null);
    const onEvent = (d: unknown, sn: number) => {
      if (!isMessageEvent(d)) return inbound.skip(sn);
      const parsed = KookMessageEvent.safeParse(d);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        deps.malformed(`KOOK event: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
        return inbound.skip(sn);
      }
      const m = parsed.data;
      if (m.author_id === me.id || m.extra.author?.bot) return inbound.skip(sn);
      if (!inbound.push(sn, () => deps.publish(messageToQuery(m, me.id, deps.botId)))) {
        deps.malformed('inbound queue full; message dropped', { messageId: m.msg_id });
        inbound.skip(sn);
      }
    };
    let socket: KookSocket;
    try {
      socket = await KookSocket.connect({
        url,
        ...(resume ? { resume } : {}),
        onEvent,
        onSession: (begun) => {
          session = begun;
          if (!begun) {
            inbound.reset();
            handledSn = 0;
            void keeper.now(null);
            return;
          }
          if (!resume || begun.sessionId !== resume.sessionId) {
            inbound.reset();
            handledSn = begun.sn;
          }
          void keeper.now({ ...begun, sn: handledSn });
        },
        onMalformed: (reason) => deps.malformed(reason),
      });
    } catch (err) {
      // A session that could not be resumed (or begun) is not tried again: the next connection starts anew.
      await keeper.finish(null);
      throw err;
    }
    deps.logger.info({ botId: deps.botId, resumed: resume !== undefined, botUserId: me.id }, 'KOOK session ready');
    const ended = socket.ended.then(async (reason) => {
      await keeper.finish(lastWord());
      return reason;
    });
    return {
      ended,
      close: async (reason) => {
        await socket.close(reason);
        await keeper.finish(lastWord());
      },
      send: (route, message, onWritten) => sendWhole(rest, route, message, onWritten),
    } satisfies OpenConnection;
  },
};
