import type { DirectSendReply, DirectSendRequest, ReplyRoute } from '@conveyor/contracts';
import type { OutboundReply, SendResult } from '@conveyor/platform-kit';

export interface DirectSendDeps {
  /** The bot by id; null when it does not exist. */
  bot(botId: string): Promise<{ adapter: string; enabled: boolean } | null>;
  /** Sends one part straight to the platform (no reply session: the deliverer's direct path). */
  send(route: ReplyRoute, reply: OutboundReply): Promise<SendResult>;
}

/**
 * The route of a message to a chat that answers nothing: the chat's id is where the platform sends
 * (the platforms' parsers use a person's id, or a group's, as the session they reply to), no inbound
 * message is quoted, and it goes whole, not streamed.
 */
export function directRoute(botId: string, adapter: string, target: DirectSendRequest['target']): ReplyRoute {
  return {
    botId,
    adapter,
    sessionId: target.id,
    launcherType: target.type,
    launcherId: target.id,
    senderId: target.type === 'person' ? target.id : '',
    replyTo: '',
    stream: false,
  };
}

/** Sends a direct message through the bot's platform; the reason when it cannot. */
export async function sendToChat(request: DirectSendRequest, deps: DirectSendDeps): Promise<DirectSendReply> {
  const bot = await deps.bot(request.botId);
  if (!bot) return { v: 1, ok: false, error: { code: 'not_found', message: `no bot ${JSON.stringify(request.botId)}` } };
  if (!bot.enabled) return { v: 1, ok: false, error: { code: 'disabled', message: `bot ${request.botId} is disabled` } };
  if (request.messageChain.length === 0) return { v: 1, ok: false, error: { code: 'invalid', message: 'the message chain is empty' } };
  const result = await deps.send(directRoute(request.botId, bot.adapter, request.target), { message: request.messageChain, isFinal: true, stream: false });
  return result.delivered ? { v: 1, ok: true } : { v: 1, ok: false, error: { code: 'failed', message: result.reason } };
}
