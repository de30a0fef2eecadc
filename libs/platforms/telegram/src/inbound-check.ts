import { LIMITS, storableChain, storableText } from '@conveyor/contracts';
import type { TelegramInbound } from './update.js';

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
