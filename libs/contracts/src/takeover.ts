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

/** The acknowledgement a user gets when their keyword asked for a human and no reply text is set. */
export const DEFAULT_HUMAN_REQUEST_REPLY = 'A person has been asked to answer here; they will reply in this chat.';

/**
 * A bot's way for a chat to ask for a person: a whole message equal to one of `keywords` (trimmed,
 * case and width ignored) or the model's `request_human` tool (`tool`) marks the chat as waiting for
 * an operator; the keyword is answered with `reply`. Operators see waiting chats in the console and,
 * with `webhookUrl`, get a POST for each chat that starts waiting.
 */
export const HumanHandoff = z.strictObject({
  keywords: z.array(z.string().trim().min(1).max(64)).max(20).default([]),
  tool: z.boolean().default(false),
  reply: z.string().trim().min(1).max(1_000).default(DEFAULT_HUMAN_REQUEST_REPLY),
  webhookUrl: z.url({ protocol: /^https?$/ }).max(2_000).nullable().default(null),
});
export type HumanHandoff = z.output<typeof HumanHandoff>;

/** How a chat asked for a person. */
export const HumanRequestVia = z.enum(['keyword', 'tool']);
export type HumanRequestVia = z.infer<typeof HumanRequestVia>;

/**
 * A change of a chat's human takeover (core NATS, `topology(prefix).subjects.takeoverEvents`),
 * published by the admin replica that made it: `taken` (an operator answers this chat; the pipeline
 * calls no model for it), `returned` (handed back), `reply` (an operator's message went out; it also
 * moves the idle return), `requested` (the chat asked for a person: a keyword or the model's tool, published
 * by the orchestrator or runner that recorded it), `dismissed` (an operator cleared that request without
 * taking the chat; taking it clears it too). Orchestrators keep the taken chats in memory from these events, and read
 * them all again from Postgres at start and every minute, so a missed event costs at most that.
 */
export const TakeoverEvent = z.object({
  v: V1,
  kind: z.enum(['taken', 'returned', 'reply', 'requested', 'dismissed']),
  chat: TakeoverChat,
  /** Who: the operator's audit name (`user:<name>` or `token:<id>`); for `requested`, `bot`. */
  operator: z.string().max(300),
  at: z.iso.datetime(),
  /** `taken`: the chat returns to the bot after this long without an operator's reply; null never. */
  idleMs: z.number().int().positive().nullable().optional(),
  /** `reply`: what the operator sent (for live transcripts; shown under the same text setting). */
  text: z.string().max(4_000).optional(),
  /** `requested`: how the chat asked (its reason, from the message or the model, is `text`). */
  via: HumanRequestVia.optional(),
}).meta({ id: 'TakeoverEvent/1' });
export type TakeoverEvent = z.infer<typeof TakeoverEvent>;

/** The key of a taken chat in memory. */
export function takeoverKey(chat: TakeoverChat): string {
  return JSON.stringify([chat.botId, chat.launcherType, chat.launcherId]);
}
