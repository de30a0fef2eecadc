import { createHash } from 'node:crypto';
import { z } from 'zod';
import { storableChain, storableText, type MessageComponent } from '@conveyor/contracts';
import type { InboundMessage } from '@conveyor/platform-kit';

/** The callback body: the encrypted JSON. */
export const EncryptedJson = z.object({ encrypt: z.string().min(1, 'encrypt is empty') });

const Id = z.string().min(1).max(200);
const Common = z.object({
  msgid: Id,
  aibotid: z.string().max(200).default(''),
  chatid: z.string().max(200).optional(),
  chattype: z.enum(['single', 'group']),
  from: z.object({ userid: Id }).loose(),
});
const TextCallback = Common.extend({ msgtype: z.literal('text'), text: z.object({ content: z.string() }).loose() }).loose();
const StreamRefresh = z.object({ msgtype: z.literal('stream'), stream: z.object({ id: Id }).loose() }).loose();

/** A member's text to the bot, in a single chat or (mentioning it) a group. */
export interface WecomBotText {
  kind: 'text';
  msgId: string;
  botId: string;
  chatType: 'single' | 'group';
  chatId: string | undefined;
  userId: string;
  text: string;
}

export type WecomBotCallback = WecomBotText | { kind: 'refresh'; streamId: string } | { kind: 'skip'; reason: string };

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');

/**
 * The decrypted callback JSON: a text message, a stream refresh (WeCom asking for the stream's
 * current content), or something else that is skipped (events, images, files: LangBot's adapter
 * answers text).
 */
export function parseWecomBotCallback(json: string): { ok: true; callback: WecomBotCallback } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  return readWecomBotCallback(raw);
}

/** A callback body already parsed (the long connection's frames carry it as JSON, not encrypted). */
export function readWecomBotCallback(raw: unknown): { ok: true; callback: WecomBotCallback } | { ok: false; error: string } {
  const type = z.object({ msgtype: z.string().max(50) }).loose().safeParse(raw);
  if (!type.success) return { ok: false, error: issues(type.error) };
  if (type.data.msgtype === 'stream') {
    const r = StreamRefresh.safeParse(raw);
    return r.success ? { ok: true, callback: { kind: 'refresh', streamId: r.data.stream.id } } : { ok: false, error: issues(r.error) };
  }
  if (type.data.msgtype !== 'text') return { ok: true, callback: { kind: 'skip', reason: `msgtype ${type.data.msgtype}` } };
  const t = TextCallback.safeParse(raw);
  if (!t.success) return { ok: false, error: issues(t.error) };
  const d = t.data;
  if (d.chattype === 'group' && !d.chatid) return { ok: false, error: 'chatid: a group message names its chat' };
  return { ok: true, callback: { kind: 'text', msgId: d.msgid, botId: d.aibotid, chatType: d.chattype, chatId: d.chatid, userId: d.from.userid, text: d.text.content } };
}

/** The chain LangBot's converter builds: an At of the bot first in a group (it is only called when mentioned), then the text without the mention. */
export function wecomBotChain(m: WecomBotText, botId: string, robotName: string): MessageComponent[] {
  const chain: MessageComponent[] = [];
  if (m.chatType === 'group') chain.push({ type: 'At', target: botId, display: robotName });
  const text = (robotName ? storableText(m.text).split(`@${robotName}`).join('') : storableText(m.text)).trim();
  if (text) chain.push({ type: 'Plain', text });
  return storableChain(chain);
}

/** Who wrote and what, as a query takes it: a group's session is the chat, a single chat's the member. */
export function wecomBotMessage(m: WecomBotText, botId: string, robotName: string): InboundMessage {
  const group = m.chatType === 'group' && m.chatId !== undefined;
  return {
    sessionId: group && m.chatId !== undefined ? m.chatId : m.userId,
    launcherType: group ? 'group' : 'person',
    senderId: m.userId,
    senderName: m.userId,
    messageChain: wecomBotChain(m, botId, robotName),
  };
}

/**
 * The stream id of a message's reply: derived from the bot and msgid, so WeCom's retry of the
 * callback gets the same stream and the dispatcher and ingress agree on it without asking each other.
 */
export function streamIdOf(botId: string, msgId: string): string {
  return createHash('sha256').update(`${botId}\u0000${msgId}`).digest('hex').slice(0, 32);
}
