import { plainText, type MessageChain, type ReplyRoute } from '@conveyor/contracts';
import { inboundQuery, PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { usesWebhook, type WecomBotConfig } from './config.js';
import { readWecomBotCallback, wecomBotMessage } from './parse.js';
import { WECOM_BOT_CMD, WecomBotRefusedError, WecomBotSocket, type WecomBotReceived } from './socket.js';

/** Callbacks of one connection waiting to be published; past this a burst is refused, not buffered without bound. */
const MAX_QUEUED_INBOUND = 1_000;

/** The markdown reply WeCom shows, as LangBot's client sends a whole (non-streamed) reply. */
export function markdownReply(message: MessageChain): { msgtype: 'markdown'; markdown: { content: string } } {
  return { msgtype: 'markdown', markdown: { content: plainText(message) } };
}

/**
 * Sends one whole reply: under the callback's req_id (`aibot_respond_msg`) when the route carries
 * one, else to the chat (`aibot_send_msg`). A refusal by WeCom is a PlatformRejectedError.
 */
async function sendOn(socket: WecomBotSocket, route: ReplyRoute, message: MessageChain, onWritten?: () => void): Promise<{ messageId?: string }> {
  const reply = markdownReply(message);
  if (!reply.markdown.content) return {};
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
    // The reply goes whole (the relay sends a reply's final part), so the query does not stream.
    chain = chain.then(() => deps.publish(inboundQuery(message, { replyTo: reqId, dedupId: cb.msgId, stream: false }))).catch((err: unknown) => {
      deps.logger.warn({ err, botId: deps.botId, msgId: cb.msgId }, 'WeCom AI bot message not published');
    }).finally(() => void queued--);
  };
}

/**
 * The WeCom AI bot's long connection (LangBot's default mode): the gateway signs in with the bot's
 * BotId and Secret and holds the WebSocket; replies travel from the dispatcher to that replica and
 * go out under the callback's req_id.
 */
export const wecomBotConnection: PlatformConnection<WecomBotConfig> = {
  holds: (config) => !usesWebhook(config),
  async open(deps): Promise<OpenConnection> {
    const socket = await WecomBotSocket.connect({ url: deps.config.ws_url, botId: deps.config.BotId, secret: deps.config.Secret, onCallback: inbound(deps) });
    deps.logger.info({ botId: deps.botId }, 'signed in to the WeCom AI bot long connection');
    return {
      ended: socket.ended,
      close: (reason) => socket.close(reason),
      send: (route, message, onWritten) => sendOn(socket, route, message, onWritten),
    };
  },
};
