import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageChain, type MessageComponent } from '@conveyor/contracts';
import { chainToMessageText, pendingImage, type InboundQuery } from '@conveyor/platform-kit';

/** A Matrix id (room, user, event): the spec bounds them at 255 bytes. */
const MatrixId = z.string().min(2).max(255);
/** A message body is bounded by the homeserver's 64 KiB event limit; this is more than one can hold. */
const MAX_BODY_CHARS = 65_536;

/** The `m.room.message` event of a room's timeline, as far as a query needs it. */
export const MatrixMessageEvent = z.looseObject({
  type: z.literal('m.room.message'),
  event_id: MatrixId.regex(/^\$/, 'an event id starts with $'),
  sender: MatrixId.regex(/^@[^:]+:.+$/, 'a user id is @localpart:server'),
  origin_server_ts: z.number().int().nonnegative(),
  content: z.looseObject({
    msgtype: z.string().max(255),
    body: z.string().max(MAX_BODY_CHARS),
    format: z.string().max(255).optional(),
    formatted_body: z.string().max(MAX_BODY_CHARS * 2).optional(),
    'm.mentions': z.looseObject({ user_ids: z.array(z.string().max(255)).max(1_000).default([]), room: z.boolean().default(false) }).optional(),
    'm.relates_to': z.looseObject({ rel_type: z.string().max(255).optional(), event_id: z.string().max(255).optional() }).optional(),
    /** An `m.image`'s media (unencrypted rooms: encrypted media comes as `file`, which the bot cannot read). */
    url: z.string().max(1_000).optional(),
  }),
});
export type MatrixMessageEvent = z.output<typeof MatrixMessageEvent>;

/** What the connection knows of the room a message came in: its members and its name. */
export interface MatrixRoomInfo {
  roomId: string;
  /** Joined members, user id → display name ('' when none is set). */
  members: ReadonlyMap<string, string>;
  name: string;
}

/** The bot as the mention rule looks for it. */
export interface MatrixSelf {
  userId: string;
  /** Its display name; a body naming it mentions it too. '' when it has none. */
  displayName: string;
}

/** Why a timeline event becomes no query though it is well-formed; undefined when it becomes one. */
export function skipReason(e: MatrixMessageEvent, self: MatrixSelf): string | undefined {
  if (e.sender === self.userId) return 'own';
  // An edit repeats a message already handled; answering it would answer the message twice.
  if (e.content['m.relates_to']?.rel_type === 'm.replace') return 'edit';
  if (e.content.msgtype === 'm.image') return e.content.url?.startsWith('mxc://') ? undefined : 'image without media';
  if (e.content.msgtype !== 'm.text' && e.content.msgtype !== 'm.notice' && e.content.msgtype !== 'm.emote') return 'not text';
  return undefined;
}

/**
 * LangBot's rule for a private chat: a room where, the bot left out, at most one member is joined.
 * Any other room is a group chat.
 */
export function isDirectRoom(room: MatrixRoomInfo, self: MatrixSelf): boolean {
  let others = 0;
  for (const id of room.members.keys()) if (id !== self.userId) others++;
  return others <= 1;
}

/** A reply's body starts with quoted lines of the message it answers (`> <@user> text`), then a blank line. */
export function stripReplyFallback(body: string): string {
  if (!body.startsWith('> ')) return body;
  const lines = body.split('\n');
  let i = 0;
  while (i < lines.length && lines[i]!.startsWith('>')) i++;
  if (i < lines.length && lines[i] === '') i++;
  return lines.slice(i).join('\n');
}

/**
 * Whether a message mentions the bot: its user id in `m.mentions.user_ids` (intentional mentions),
 * or, for clients that do not send those, its user id or display name in the body, or a matrix.to
 * link to it in the formatted body.
 */
export function mentionsBot(e: MatrixMessageEvent, self: MatrixSelf): boolean {
  const c = e.content;
  if (c['m.mentions']?.user_ids.includes(self.userId)) return true;
  const body = stripReplyFallback(c.body);
  if (body.includes(self.userId)) return true;
  if (self.displayName && body.toLowerCase().includes(self.displayName.toLowerCase())) return true;
  return c.formatted_body !== undefined && c.formatted_body.includes(`matrix.to/#/${self.userId}`);
}

const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);

/**
 * A text message as LangBot's chain: a Source, an At of the Conveyor bot id first when it mentions
 * the bot (what the at-bot rule looks for), then the body as Plain with the bot's user id taken out
 * (as LangBot does) and a reply's quoted fallback dropped.
 */
export function messageToChain(e: MatrixMessageEvent, self: MatrixSelf, botId: string): MessageChain {
  const chain: MessageChain = [{ type: 'Source', id: e.event_id, timestamp: Math.floor(e.origin_server_ts / 1000) }];
  const at = mentionsBot(e, self);
  if (at) chain.push({ type: 'At', target: botId, display: self.displayName });
  // An image is pending by its mxc:// URL (the connection downloads it); its body, the file name or
  // caption, follows as text, as LangBot keeps it.
  if (e.content.msgtype === 'm.image' && e.content.url) chain.push(pendingImage(e.content.url));
  let text = stripReplyFallback(e.content.body);
  if (at) text = text.split(self.userId).join('').trim();
  if (text) chain.push({ type: 'Plain', text });
  return chain;
}

/**
 * The query a message becomes: a private chat (a room with one other member) is a person chat, any
 * other room a group chat named after the room. Both are keyed by the room id, because that is where
 * the reply goes. The de-duplication id is the event id, unique per homeserver, so a batch synced
 * again after a takeover is one query per message.
 */
export function messageToQuery(e: MatrixMessageEvent, room: MatrixRoomInfo, self: MatrixSelf, botId: string, stream: boolean): InboundQuery {
  const direct = isDirectRoom(room, self);
  return {
    sessionId: room.roomId,
    launcherType: direct ? 'person' : 'group',
    senderId: e.sender,
    senderName: cut(room.members.get(e.sender) || e.sender),
    ...(direct ? {} : { groupName: cut(room.name || room.roomId) }),
    messageChain: storableChain(messageToChain(e, self, botId)),
    replyTo: e.event_id,
    dedupId: e.event_id,
    stream,
  };
}

/**
 * The text and intentional mentions of a reply: an At is written as the user's id and listed in
 * `m.mentions`. A user id holds `:` and `.`, so text right after it would read as part of the id
 * (`@alice:hs.testEcho`): a space separates them unless the text starts with one.
 */
export function chainToContent(chain: readonly MessageComponent[]): { body: string; mentions: string[] } {
  const mentions = new Set<string>();
  const spaced = chain.flatMap((c, i): MessageComponent[] => {
    const next = chain[i + 1];
    const separated = !next || (next.type === 'Plain' && /^\s/.test(next.text));
    return (c.type === 'At' || c.type === 'AtAll') && !separated ? [c, { type: 'Plain', text: ' ' }] : [c];
  });
  const body = chainToMessageText(spaced, {
    at: (id) => {
      if (/^@[^:\s]+:\S+$/.test(id)) mentions.add(id);
      return id;
    },
    atAll: '@room',
  });
  return { body, mentions: [...mentions] };
}

/** The content of a new text message, optionally a reply to an event. */
export function textContent(body: string, opts: { replyTo?: string; mentions?: string[] } = {}): Record<string, unknown> {
  return {
    msgtype: 'm.text',
    body,
    'm.mentions': { user_ids: opts.mentions ?? [] },
    ...(opts.replyTo ? { 'm.relates_to': { 'm.in_reply_to': { event_id: opts.replyTo } } } : {}),
  };
}

/** The content of an edit replacing the text of `eventId` (clients without edits show the `* ` body). */
export function editContent(eventId: string, body: string, mentions: string[] = []): Record<string, unknown> {
  return {
    msgtype: 'm.text',
    body: `* ${body}`,
    'm.new_content': { msgtype: 'm.text', body, 'm.mentions': { user_ids: mentions } },
    'm.mentions': {},
    'm.relates_to': { rel_type: 'm.replace', event_id: eventId },
  };
}
