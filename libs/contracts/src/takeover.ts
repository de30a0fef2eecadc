import { z } from 'zod';
import { LauncherType } from './messages.js';

const V1 = z.literal(1);

/** A chat as takeover names it: the bot and the launcher (a person, or a group). */
export const TakeoverChat = z.object({
  botId: z.string().min(1).max(200),
  launcherType: LauncherType,
  launcherId: z.string().min(1).max(1000),
});
export type TakeoverChat = z.infer<typeof TakeoverChat>;

/**
 * A change of a chat's human takeover (core NATS, `topology(prefix).subjects.takeoverEvents`),
 * published by the admin replica that made it: `taken` (an operator answers this chat; the pipeline
 * calls no model for it), `returned` (handed back), `reply` (an operator's message went out; it also
 * moves the idle return). Orchestrators keep the taken chats in memory from these events, and read
 * them all again from Postgres at start and every minute, so a missed event costs at most that.
 */
export const TakeoverEvent = z.object({
  v: V1,
  kind: z.enum(['taken', 'returned', 'reply']),
  chat: TakeoverChat,
  /** Who: the operator's audit name (`user:<name>` or `token:<id>`). */
  operator: z.string().max(300),
  at: z.iso.datetime(),
  /** `taken`: the chat returns to the bot after this long without an operator's reply; null never. */
  idleMs: z.number().int().positive().nullable().optional(),
  /** `reply`: what the operator sent (for live transcripts; shown under the same text setting). */
  text: z.string().max(4_000).optional(),
}).meta({ id: 'TakeoverEvent/1' });
export type TakeoverEvent = z.infer<typeof TakeoverEvent>;

/** The key of a taken chat in memory. */
export function takeoverKey(chat: TakeoverChat): string {
  return JSON.stringify([chat.botId, chat.launcherType, chat.launcherId]);
}
