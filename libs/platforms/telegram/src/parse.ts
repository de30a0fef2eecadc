import { z } from 'zod';
import { LIMITS, storableChain, storableText, type LauncherType, type MessageComponent } from '@conveyor/contracts';
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

export type CheckedTelegramInbound = { ok: true; inbound: TelegramInbound } | { ok: false; reason: string };

/** Bot API ids are integers of at most 52 significant bits, so always safe integers here. */
function isTelegramId(id: string): boolean {
  return /^-?\d{1,16}$/.test(id) && Number.isSafeInteger(Number(id));
}

/**
 * The update's message made storable (see storableText), or why it can never become a query: an id
 * that is not a Telegram id (`1e308` parses as a number but is no chat anyone can answer) or a name
 * past LIMITS.nameChars (Telegram's own limits are far below it).
 */
export function checkTelegramInbound(m: TelegramInbound): CheckedTelegramInbound {
  if (!isTelegramId(m.sessionId)) return { ok: false, reason: 'the chat id is not a Telegram id' };
  if (!isTelegramId(m.senderId)) return { ok: false, reason: 'the sender id is not a Telegram id' };
  const senderName = storableText(m.senderName);
  if (senderName.length > LIMITS.nameChars) return { ok: false, reason: `the sender name is longer than ${LIMITS.nameChars} characters` };
  const groupName = m.groupName === undefined ? undefined : storableText(m.groupName);
  if (groupName !== undefined && groupName.length > LIMITS.nameChars) {
    return { ok: false, reason: `the chat title is longer than ${LIMITS.nameChars} characters` };
  }
  return {
    ok: true,
    inbound: { ...m, senderName, ...(groupName !== undefined ? { groupName } : {}), messageChain: storableChain(m.messageChain) },
  };
}
