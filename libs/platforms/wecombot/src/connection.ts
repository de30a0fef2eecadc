import { plainText, type MessageChain, type ReplyRoute } from '@conveyor/contracts';
import { inboundQuery, PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection, type StreamSnapshot } from '@conveyor/platform-kit';
import { usesWebhook, type WecomBotConfig } from './config.js';
import { readWecomBotCallback, wecomBotMessage } from './parse.js';
import { streamContent } from './stream.js';
import { WECOM_BOT_CMD, WecomBotRefusedError, WecomBotSocket, type WecomBotReceived } from './socket.js';

/** Callbacks of one connection waiting to be published; past this a burst is refused, not buffered without bound. */
const MAX_QUEUED_INBOUND = 1_000;

/**
 * The reply body WeCom shows: a snapshot of a streamed reply as its stream message (the whole
 * content so far each time: WeCom replaces what it shows), a whole reply as markdown, as LangBot's
 * client sends them.
 */
export function replyBody(message: MessageChain, stream?: StreamSnapshot) {
  const content = plainText(message);
  if (stream) return { msgtype: 'stream' as const, stream: { id: stream.id, finish: stream.final, content: streamContent(content) } };
  return { msgtype: 'markdown' as const, markdown: { content } };
}

/**
 * Sends one reply or snapshot: under the callback's req_id (`aibot_respond_msg`) when the route
 * carries one, else to the chat (`aibot_send_msg`, whole replies only). A refusal by WeCom is a
 * PlatformRejectedError.
 */
async function sendOn(socket: WecomBotSocket, route: ReplyRoute, message: MessageChain, onWritten?: () => void, stream?: StreamSnapshot): Promise<{ messageId?: string }> {
  // Without a callback to answer there is no stream to show: the reply goes whole with its final part.
  if (!route.replyTo && stream && !stream.final) return {};
  const reply = replyBody(message, route.replyTo ? stream : undefined);
  if (reply.msgtype === 'markdown' && !reply.markdown.content) return {};
  try {
    if (route.replyTo) await socket.request(WECOM_BOT_CMD.respond, reply, route.replyTo, onWritten);
    else await socket.request(WECOM_BOT_CMD.send, { chatid: route.sessionId, ...reply }, undefined, onWritten);
    return {};
  } catch (err) {
    if (err instanceof WecomBotRefusedError) throw new PlatformRejectedError(err.message);
    throw err;
  }
}

/**
 * What arrives on the connection: a member's text becomes a query one after another (a chat's order
 * kept), answered under the callback's req_id; events (entering a chat, feedback) and other message
 * types are no query; malformed frames are reported.
 */
function inbound(deps: ConnectionDeps<WecomBotConfig>) {
  let queued = 0;
  let chain: Promise<void> = Promise.resolve();
  return (received: WecomBotReceived) => {
    if (received.kind === 'malformed') return deps.malformed(received.reason);
    const { frame } = received;
    if (frame.cmd === WECOM_BOT_CMD.eventCallback) return;
    if (frame.cmd !== WECOM_BOT_CMD.messageCallback) return deps.malformed(`unknown command ${frame.cmd}`);
    const reqId = frame.headers.req_id;
    if (!reqId) return deps.malformed('a message callback without its req_id');
    const parsed = readWecomBotCallback(frame.body);
    if (!parsed.ok) return deps.malformed(`malformed message: ${parsed.error}`);
    const cb = parsed.callback;
    if (cb.kind !== 'text') return;
    if (cb.botId && cb.botId !== deps.config.BotId) return deps.malformed('a message for another bot', { aibotid: cb.botId });
    const message = wecomBotMessage(cb, deps.botId, deps.config.robot_name);
    if (!message.messageChain.some((c) => c.type !== 'At')) return;
    if (queued >= MAX_QUEUED_INBOUND) return deps.malformed('inbound queue full; message dropped', { msgId: cb.msgId });
    queued++;
    chain = chain.then(() => deps.publish(inboundQuery(message, { replyTo: reqId, dedupId: cb.msgId, stream: deps.config['enable-stream-reply'] }))).catch((err: unknown) => {
      deps.logger.warn({ err, botId: deps.botId, msgId: cb.msgId }, 'WeCom AI bot message not published');
    }).finally(() => void queued--);
  };
}

/**
 * The WeCom AI bot's long connection (LangBot's default mode): the gateway signs in with the bot's
 * BotId and Secret and holds the WebSocket; replies travel from the dispatcher to that replica and
 * go out under the callback's req_id, streamed (`enable-stream-reply`, on by default) or whole.
 */
export const wecomBotConnection: PlatformConnection<WecomBotConfig> = {
  holds: (config) => !usesWebhook(config),
  async open(deps): Promise<OpenConnection> {
    const socket = await WecomBotSocket.connect({ url: deps.config.ws_url, botId: deps.config.BotId, secret: deps.config.Secret, onCallback: inbound(deps) });
    deps.logger.info({ botId: deps.botId }, 'signed in to the WeCom AI bot long connection');
    return {
      ended: socket.ended,
      close: (reason) => socket.close(reason),
      send: (route, message, onWritten, stream) => sendOn(socket, route, message, onWritten, stream),
    };
  },
};
