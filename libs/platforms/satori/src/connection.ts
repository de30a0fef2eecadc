import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { ConnectionStateKeeper, SequencedInbound } from '@conveyor/gateway';
import { PlatformRejectedError, splitMessageText, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { z } from 'zod';
import type { SatoriConfig } from './config.js';
import { SatoriMessageEvent, messageToQuery } from './convert.js';
import { chainToContent, escapeText } from './elements.js';
import { SatoriResume, SatoriSocket, type SatoriLogin } from './socket.js';

/** A reply is split into messages of at most this many characters. */
export const SATORI_MAX_CONTENT = 4_000;
const REQUEST_TIMEOUT_MS = 15_000;

/** The Satori server refused a call; a 4xx other than 408/429 is for good. */
export class SatoriApiError extends Error {
  readonly code = 'SATORI_API_ERROR';

  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'SatoriApiError';
  }

  get permanent(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 408 && this.status !== 429;
  }
}

const Created = z.array(z.looseObject({ id: z.string().max(200) })).max(100);

/** `message.create` on the Satori HTTP API, speaking for `login`: the content quotes the user's message. */
export async function createMessage(config: SatoriConfig, login: SatoriLogin, channelId: string, content: string, onWritten?: () => void): Promise<string | undefined> {
  const pending = fetch(`${config.endpoint}/v1/message.create`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(config.token ? { authorization: `Bearer ${config.token}` } : {}),
      'satori-platform': login.platform,
      'satori-user-id': login.selfId,
      // Servers on the first Satori version read these instead.
      'x-platform': login.platform,
      'x-self-id': login.selfId,
    },
    body: JSON.stringify({ channel_id: channelId, content }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  onWritten?.();
  const res = await pending;
  const text = await res.text();
  if (!res.ok) throw new SatoriApiError(res.status, `Satori message.create failed with ${res.status}: ${text.slice(0, 300)}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const parsed = Created.safeParse(body);
  return parsed.success ? parsed.data[0]?.id : undefined;
}

/** Sends one whole reply: split at 4,000 characters, the first piece quoting the user's message. */
export async function sendWhole(config: SatoriConfig, login: SatoriLogin, route: ReplyRoute, message: MessageChain, onWritten?: () => void): Promise<{ messageId?: string }> {
  const content = chainToContent(message);
  if (!content) return {};
  try {
    let first: string | undefined;
    for (const [i, piece] of splitMessageText(content, SATORI_MAX_CONTENT).entries()) {
      const quote = i === 0 && route.replyTo ? `<quote id="${escapeText(route.replyTo)}"/>` : '';
      const id = await createMessage(config, login, route.sessionId, quote + piece, i === 0 ? onWritten : undefined);
      first ??= id;
    }
    return first !== undefined ? { messageId: first } : {};
  } catch (err) {
    if (err instanceof SatoriApiError && err.permanent) throw new PlatformRejectedError(err.message);
    throw err;
  }
}

/**
 * Satori: the gateway replica holding the bot keeps its event WebSocket and sends replies over the
 * HTTP API. The sn of the last event handled is kept in the connection's fenced state, so the next
 * connection of the bot (on this replica or on one taking it over) identifies with it and the server
 * replays what came after. The bot's own messages are ignored.
 */
export const satoriConnection: PlatformConnection<SatoriConfig> = {
  async open(deps) {
    const state = deps.state(SatoriResume);
    const resume = await state.get();
    const keeper = new ConnectionStateKeeper<SatoriResume>(state, (err) => deps.logger.warn({ err, botId: deps.botId }, 'Satori sn not stored; the next connection may miss or replay events'));
    let handled = resume?.sn;
    const inbound = new SequencedInbound({
      onHandled: (sn) => {
        handled = sn;
        keeper.soon({ sn });
      },
      onFailed: (err) => deps.logger.warn({ err, botId: deps.botId }, 'Satori message not published'),
    });
    let socket: SatoriSocket | undefined;
    const onEvent = (body: unknown, sn: number | undefined) => {
      const type = z.looseObject({ type: z.string() }).safeParse(body);
      if (!type.success || type.data.type !== 'message-created') return sn !== undefined ? inbound.skip(sn) : undefined;
      const parsed = SatoriMessageEvent.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        deps.malformed(`message-created: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
        return sn !== undefined ? inbound.skip(sn) : undefined;
      }
      const e = parsed.data;
      const selfId = socket?.login.selfId ?? deps.config.self_id;
      if (e.user.id === selfId) return sn !== undefined ? inbound.skip(sn) : undefined;
      const publish = () => deps.publish(messageToQuery(e, selfId, deps.botId));
      // An event without an sn cannot be resumed from; it is still published, in order.
      if (!inbound.push(sn ?? handled ?? 0, publish)) deps.malformed('inbound queue full; message dropped', { messageId: e.message.id });
    };
    try {
      socket = await SatoriSocket.connect({
        endpoint: deps.config.endpoint,
        token: deps.config.token,
        ...(resume ? { resume } : {}),
        want: { platform: deps.config.platform, selfId: deps.config.self_id },
        onEvent,
        onMalformed: (reason) => deps.malformed(reason),
      });
    } catch (err) {
      await keeper.finish(resume ?? null);
      throw err;
    }
    const open = socket;
    deps.logger.info({ botId: deps.botId, resumedFrom: resume?.sn, platform: open.login.platform }, 'Satori session ready');
    const lastWord = () => (handled !== undefined ? { sn: handled } : null);
    return {
      ended: open.ended.then(async (reason) => {
        await keeper.finish(lastWord());
        return reason;
      }),
      close: async (reason) => {
        await open.close(reason);
        await keeper.finish(lastWord());
      },
      send: (route, message, onWritten) => sendWhole(deps.config, open.login, route, message, onWritten),
    } satisfies OpenConnection;
  },
};
