import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageChain, type ReplyRoute } from '@conveyor/contracts';
import { PlatformRejectedError, type ConnectionDeps, type InboundQuery, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { oneBotUrl, type OneBotConfig } from './config.js';
import { chainToSegments, segmentsToChain } from './convert.js';
import { parseCqString } from './cq-code.js';
import { Segment, type MessageEvent } from './events.js';
import { OneBotActionError, OneBotSocket } from './socket.js';

/** Inbound messages of one connection waiting to be published; past this a burst is refused, not buffered without bound. */
const MAX_QUEUED_INBOUND = 1_000;
/** A quoted message is read with get_msg; a slow implementation must not hold up the chat for long. */
const GET_MSG_TIMEOUT_MS = 2_000;

const GetMsgData = z.looseObject({
  message: z.union([z.array(z.unknown()), z.string()]).optional(),
  sender: z.looseObject({ user_id: z.union([z.number(), z.string()]).optional() }).optional(),
  user_id: z.union([z.number(), z.string()]).optional(),
});
const SendMsgData = z.looseObject({ message_id: z.union([z.number(), z.string()]).optional() }).nullish();

const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);

/** A QQ id as the implementation expects it in an action: a number when it is one. */
function qqId(id: string): number | string {
  return /^\d{1,16}$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : id;
}

/** The query a message event becomes (LangBot: private → person session of the user, group → group session). */
export async function eventToQuery(event: MessageEvent, botId: string, getMessage?: (id: string) => Promise<{ senderId: string | null; segments: Segment[] } | null>): Promise<InboundQuery> {
  const segments = typeof event.message === 'string' ? parseCqString(event.message) : event.message;
  const chain = await segmentsToChain(segments, {
    messageId: event.message_id,
    time: event.time ?? Math.floor(Date.now() / 1000),
    selfId: event.self_id,
    botAccountId: botId,
    ...(getMessage ? { getMessage } : {}),
  });
  const sender = event.sender ?? {};
  const group = event.message_type === 'group';
  const senderName = group ? sender.card || sender.nickname || event.user_id : sender.nickname || event.user_id;
  return {
    sessionId: group ? event.group_id ?? '' : event.user_id,
    launcherType: group ? 'group' : 'person',
    senderId: event.user_id,
    senderName: cut(senderName),
    // LangBot's placeholder when the group's name is not looked up.
    ...(group ? { groupName: `Group ${event.group_id}` } : {}),
    messageChain: storableChain(chain),
    replyTo: event.message_id,
    dedupId: `${event.self_id}:${event.message_id}`,
    stream: false,
  };
}

/**
 * OneBot v11 over the implementation's forward WebSocket: events in, `send_msg` out. Messages the
 * bot sent itself are ignored; heartbeats and lifecycle events only show the connection is alive;
 * a frame that cannot be understood is reported as malformed and the connection goes on.
 */
export const oneBotConnection: PlatformConnection<OneBotConfig> = {
  async open(deps: ConnectionDeps<OneBotConfig>): Promise<OpenConnection> {
    let queued = 0;
    let chain: Promise<void> = Promise.resolve();
    let socket: OneBotSocket | undefined;
    const getMessage = async (id: string) => {
      if (!socket) return null;
      const data = await socket.call('get_msg', { message_id: qqId(id) }, GET_MSG_TIMEOUT_MS);
      const parsed = GetMsgData.safeParse(data ?? {});
      if (!parsed.success) return null;
      const d = parsed.data;
      const segments = Array.isArray(d.message) ? d.message.flatMap((s) => { const p = Segment.safeParse(s); return p.success ? [p.data] : []; }) : typeof d.message === 'string' ? parseCqString(d.message) : [];
      const sender = d.sender?.user_id ?? d.user_id;
      return { senderId: sender === undefined ? null : String(sender), segments };
    };
    const onMessage = async (event: MessageEvent) => {
      if (event.user_id === event.self_id) return;
      const query = await eventToQuery(event, deps.botId, getMessage);
      await deps.publish(query);
    };
    socket = await OneBotSocket.connect({
      url: oneBotUrl(deps.config),
      accessToken: deps.config['access-token'],
      onFrame: (frame) => {
        if (frame.kind === 'malformed') return deps.malformed(frame.reason);
        if (frame.kind === 'meta') {
          if (frame.type === 'lifecycle') deps.logger.info({ botId: deps.botId, subType: frame.subType }, 'OneBot lifecycle event');
          return;
        }
        if (frame.kind !== 'message') return;
        if (queued >= MAX_QUEUED_INBOUND) return deps.malformed('inbound queue full; message dropped', { messageId: frame.event.message_id });
        queued++;
        // One after another, so a chat's messages reach the bus in the order the platform sent them.
        chain = chain.then(() => onMessage(frame.event)).catch((err: unknown) => {
          deps.logger.warn({ err, botId: deps.botId, messageId: frame.event.message_id }, 'OneBot message not published');
        }).finally(() => void queued--);
      },
    });
    const open = socket;
    return {
      ended: open.ended,
      close: (reason) => open.close(reason),
      async send(route: ReplyRoute, message: MessageChain, onWritten?: () => void) {
        const segments = chainToSegments(message);
        if (segments.length === 0) return {};
        const group = route.launcherType === 'group';
        const params = group
          ? { message_type: 'group', group_id: qqId(route.sessionId), message: segments }
          : { message_type: 'private', user_id: qqId(route.sessionId), message: segments };
        try {
          const data = SendMsgData.safeParse(await open.call('send_msg', params, undefined, onWritten));
          const id = data.success ? data.data?.message_id : undefined;
          return id !== undefined ? { messageId: String(id) } : {};
        } catch (err) {
          if (err instanceof OneBotActionError) throw new PlatformRejectedError(err.message);
          throw err;
        }
      },
    };
  },
};
