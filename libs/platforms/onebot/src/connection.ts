import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageChain, type ReplyRoute } from '@conveyor/contracts';
import { PlatformRejectedError, type ConnectionDeps, type InboundQuery, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { oneBotUrl, type OneBotConfig } from './config.js';
import { chainToSegments, segmentsToChain } from './convert.js';
import { parseCqString } from './cq-code.js';
import { Segment, type Frame, type MessageEvent } from './parse.js';
import { listenReverse, type ReverseListener } from './reverse.js';
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
const GroupInfoData = z.looseObject({ group_name: z.string().max(10_000).optional() });
/** Group names as LangBot caches them: an hour when read, a minute when the lookup failed. */
const GROUP_NAME_TTL_MS = 3_600_000;
const GROUP_NAME_MISS_TTL_MS = 60_000;
const GROUP_NAME_CACHE = 4_096;
const SendMsgData = z.looseObject({ message_id: z.union([z.number(), z.string()]).optional() }).nullish();

const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);

/** A QQ id as the implementation expects it in an action: a number when it is one. */
function qqId(id: string): number | string {
  return /^\d{1,16}$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : id;
}

/** The query a message event becomes (LangBot: private → person session of the user, group → group session). */
export async function eventToQuery(
  event: MessageEvent,
  botId: string,
  getMessage?: (id: string) => Promise<{ senderId: string | null; segments: Segment[] } | null>,
  groupName?: (groupId: string) => Promise<string>,
): Promise<InboundQuery> {
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
    // LangBot's placeholder when the group's name cannot be read.
    ...(group ? { groupName: cut((await groupName?.(event.group_id ?? '').catch(() => '')) || `Group ${event.group_id}`) } : {}),
    messageChain: storableChain(chain),
    replyTo: event.message_id,
    dedupId: `${event.self_id}:${event.message_id}`,
    stream: false,
  };
}

/** Sends one reply with `send_msg` on an open socket; a refusal by the implementation is a PlatformRejectedError. */
async function sendOn(socket: OneBotSocket, route: ReplyRoute, message: MessageChain, onWritten?: () => void): Promise<{ messageId?: string }> {
  const segments = chainToSegments(message);
  if (segments.length === 0) return {};
  const params = route.launcherType === 'group'
    ? { message_type: 'group', group_id: qqId(route.sessionId), message: segments }
    : { message_type: 'private', user_id: qqId(route.sessionId), message: segments };
  try {
    const data = SendMsgData.safeParse(await socket.call('send_msg', params, undefined, onWritten));
    const id = data.success ? data.data?.message_id : undefined;
    return id !== undefined ? { messageId: String(id) } : {};
  } catch (err) {
    if (err instanceof OneBotActionError) throw new PlatformRejectedError(err.message);
    throw err;
  }
}

/**
 * What arrives on a socket, whichever side opened it: messages become queries one after another (a
 * chat's order kept, at most MAX_QUEUED_INBOUND waiting), the bot's own messages are ignored,
 * lifecycle events logged, heartbeats only show the peer is alive, malformed frames reported.
 */
function inbound(deps: ConnectionDeps<OneBotConfig>, socket: () => OneBotSocket | undefined) {
  let queued = 0;
  let chain: Promise<void> = Promise.resolve();
  const getMessage = async (id: string) => {
    const s = socket();
    if (!s) return null;
    const parsed = GetMsgData.safeParse((await s.call('get_msg', { message_id: qqId(id) }, GET_MSG_TIMEOUT_MS)) ?? {});
    if (!parsed.success) return null;
    const d = parsed.data;
    const segments = Array.isArray(d.message) ? d.message.flatMap((x) => { const p = Segment.safeParse(x); return p.success ? [p.data] : []; }) : typeof d.message === 'string' ? parseCqString(d.message) : [];
    const sender = d.sender?.user_id ?? d.user_id;
    return { senderId: sender === undefined ? null : String(sender), segments };
  };
  const groupNames = new Map<string, { name: string; until: number }>();
  const groupName = async (groupId: string) => {
    const hit = groupNames.get(groupId);
    if (hit && hit.until > Date.now()) return hit.name;
    const s = socket();
    let name = '';
    if (s) {
      const parsed = GroupInfoData.safeParse(await s.call('get_group_info', { group_id: qqId(groupId) }, GET_MSG_TIMEOUT_MS).catch(() => null));
      name = parsed.success ? parsed.data.group_name ?? '' : '';
    }
    groupNames.delete(groupId);
    if (groupNames.size >= GROUP_NAME_CACHE) groupNames.delete(groupNames.keys().next().value ?? '');
    groupNames.set(groupId, { name, until: Date.now() + (name ? GROUP_NAME_TTL_MS : GROUP_NAME_MISS_TTL_MS) });
    return name;
  };
  const onMessage = async (event: MessageEvent) => {
    if (event.user_id === event.self_id) return;
    await deps.publish(await eventToQuery(event, deps.botId, getMessage, groupName));
  };
  return (frame: Exclude<Frame, { kind: 'response' }>) => {
    if (frame.kind === 'malformed') return deps.malformed(frame.reason);
    if (frame.kind === 'meta') {
      if (frame.type === 'lifecycle') deps.logger.info({ botId: deps.botId, subType: frame.subType }, 'OneBot lifecycle event');
      return;
    }
    if (frame.kind !== 'message') return;
    if (queued >= MAX_QUEUED_INBOUND) return deps.malformed('inbound queue full; message dropped', { messageId: frame.event.message_id });
    queued++;
    chain = chain.then(() => onMessage(frame.event)).catch((err: unknown) => {
      deps.logger.warn({ err, botId: deps.botId, messageId: frame.event.message_id }, 'OneBot message not published');
    }).finally(() => void queued--);
  };
}

async function openForward(deps: ConnectionDeps<OneBotConfig>): Promise<OpenConnection> {
  let socket: OneBotSocket | undefined;
  socket = await OneBotSocket.connect({ url: oneBotUrl(deps.config), accessToken: deps.config['access-token'], onFrame: inbound(deps, () => socket) });
  const open = socket;
  return {
    ended: open.ended,
    close: (reason) => open.close(reason),
    send: (route, message, onWritten) => sendOn(open, route, message, onWritten),
  };
}

async function openReverse(deps: ConnectionDeps<OneBotConfig>): Promise<OpenConnection> {
  let listener: ReverseListener | undefined;
  listener = await listenReverse(deps.config, { onFrame: inbound(deps, () => listener?.current()) });
  const open = listener;
  deps.logger.info({ botId: deps.botId, host: deps.config.host, port: deps.config.port }, 'listening for the OneBot implementation (reverse WebSocket)');
  return {
    ended: open.ended,
    close: (reason) => open.close(reason),
    send: (route, message, onWritten) => {
      const socket = open.current();
      // Not a refusal: the implementation reconnects, and the dispatcher tries the part again.
      if (!socket) return Promise.reject(new Error('no OneBot implementation is connected to this bot yet'));
      return sendOn(socket, route, message, onWritten);
    },
  };
}

/**
 * OneBot v11: events in, `send_msg` out, over the implementation's forward WebSocket (we connect) or
 * a reverse WebSocket (it connects to the replica holding the bot).
 */
export const oneBotConnection: PlatformConnection<OneBotConfig> = {
  open: (deps) => (deps.config.mode === 'reverse' ? openReverse(deps) : openForward(deps)),
};
