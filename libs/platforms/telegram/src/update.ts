import { z } from 'zod';
import type { LauncherType, MessageComponent } from '@conveyor/contracts';
import type { TelegramConfig } from './config.js';

const TgUser = z.object({ id: z.number(), is_bot: z.boolean().optional(), first_name: z.string().default(''), last_name: z.string().optional(), username: z.string().optional() });
const TgChat = z.object({ id: z.number(), type: z.enum(['private', 'group', 'supergroup', 'channel']), title: z.string().optional() });
const TgMessage = z.object({
  message_id: z.number(),
  from: TgUser.optional(),
  chat: TgChat,
  date: z.number().optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  message_thread_id: z.number().optional(),
});
export const TelegramUpdateSchema = z.object({ update_id: z.number(), message: TgMessage.optional() }).loose();

export interface TelegramInbound {
  updateId: number;
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageId: string;
  messageChain: MessageComponent[];
}

/**
 * An update as LangBot's telegram adapter reads it: private chats are person sessions, groups and
 * supergroups group sessions keyed by the chat id; `@bot_username` in the text becomes an `At` of the
 * bot (so the group at-bot rule matches) and is removed from the text. Updates without a text
 * message (edits, joins, channel posts) yield null and are acknowledged without a query.
 */
export function parseTelegramUpdate(raw: unknown, config: TelegramConfig, botAccountId: string): { ok: true; inbound: TelegramInbound | null } | { ok: false; error: string } {
  const parsed = TelegramUpdateSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  const m = parsed.data.message;
  const text = m?.text ?? m?.caption;
  if (!m || text === undefined || m.chat.type === 'channel') return { ok: true, inbound: null };
  const chain: MessageComponent[] = [];
  let body = text;
  const mention = config.bot_username ? `@${config.bot_username}` : '';
  if (mention && body.includes(mention)) {
    chain.push({ type: 'At', target: botAccountId, display: '' });
    body = body.split(mention).join('');
  }
  chain.push({ type: 'Plain', text: body });
  const from = m.from;
  const senderName = from ? [from.first_name, from.last_name].filter(Boolean).join(' ') || from.username || String(from.id) : 'User';
  const sessionId = String(m.chat.id);
  const group = m.chat.type === 'group' || m.chat.type === 'supergroup';
  return {
    ok: true,
    inbound: {
      updateId: parsed.data.update_id,
      sessionId,
      launcherType: group ? 'group' : 'person',
      senderId: from ? String(from.id) : sessionId,
      senderName,
      ...(group ? { groupName: m.chat.title ?? sessionId } : {}),
      messageId: String(m.message_id),
      messageChain: chain,
    },
  };
}
