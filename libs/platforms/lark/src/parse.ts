import { z } from 'zod';
import { LIMITS, storableChain, storableText, type LauncherType, type MessageComponent } from '@conveyor/contracts';
import { inboundQuery, pendingImage, type InboundQuery } from '@conveyor/platform-kit';

const Id = z.string().min(1).max(200);

const Mention = z.object({
  key: z.string().max(100),
  id: z.object({ open_id: z.string().max(200).optional() }).loose().optional(),
  name: z.string().max(LIMITS.nameChars * 4).default(''),
}).loose();

const MessageEvent = z.object({
  sender: z.object({
    sender_id: z.object({ open_id: Id, union_id: z.string().max(200).optional() }).loose(),
    sender_type: z.string().max(100).optional(),
  }).loose(),
  message: z.object({
    message_id: Id,
    chat_id: Id,
    chat_type: z.string().max(100),
    message_type: z.string().max(100),
    /** A JSON string, its shape by message_type. */
    content: z.string(),
    mentions: z.array(Mention).max(100).optional(),
  }).loose(),
}).loose();

const EventV2 = z.object({
  schema: z.literal('2.0'),
  header: z.object({ event_id: Id, event_type: z.string().max(200), token: z.string().max(500).optional() }).loose(),
  event: z.unknown(),
}).loose();

const UrlVerification = z.object({ type: z.literal('url_verification'), challenge: z.string().min(1).max(1000), token: z.string().max(500).optional() }).loose();

export interface LarkInbound {
  eventId: string;
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageId: string;
  messageChain: MessageComponent[];
}

export type LarkParsed =
  | { kind: 'challenge'; challenge: string; token?: string | undefined }
  | { kind: 'message'; inbound: LarkInbound; token?: string | undefined }
  /** A valid delivery that asks for no answer (another event type, an app's own message, an empty text). */
  | { kind: 'ignored'; eventId?: string; token?: string | undefined }
  | { kind: 'malformed'; error: string };

const issues = (e: z.ZodError, prefix = '') => e.issues.map((i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || 'body'}: ${i.message}`).join('; ');

const TextContent = z.object({ text: z.string() }).loose();
const ImageContent = z.object({ image_key: z.string().min(1).max(500) }).loose();
const PostContent = z.object({ content: z.array(z.array(z.object({ tag: z.string() }).loose()).max(200)).max(200) }).loose();

/** Who a mention key stands for: the bot itself (by its name, as LangBot tells it) or another user. */
function mentionAt(key: string, mentions: z.output<typeof Mention>[], botName: string, botAccountId: string): MessageComponent | null {
  const m = mentions.find((x) => x.key === key);
  if (!m) return null;
  if (botName && m.name === botName) return { type: 'At', target: botAccountId, display: botName };
  return { type: 'At', target: m.id?.open_id ?? m.name, display: m.name.slice(0, LIMITS.nameChars) };
}

/** Text with `@_user_N` keys turned into At components (LangBot's lark converter); unknown keys stay text. */
function textComponents(text: string, mentions: z.output<typeof Mention>[], botName: string, botAccountId: string): MessageComponent[] {
  const out: MessageComponent[] = [];
  let plain = '';
  for (const part of text.split(/(@_user_\d+)/)) {
    const at = /^@_user_\d+$/.test(part) ? mentionAt(part, mentions, botName, botAccountId) : null;
    if (!at) {
      plain += part;
      continue;
    }
    if (plain.trim()) out.push({ type: 'Plain', text: plain.trim() });
    plain = '';
    out.push(at);
  }
  if (plain.trim()) out.push({ type: 'Plain', text: plain.trim() });
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A message's content as components; null for a type that carries nothing to answer. */
function contentComponents(
  message: z.output<typeof MessageEvent>['message'],
  botName: string,
  botAccountId: string,
): MessageComponent[] | { error: string } | null {
  const content = parseJson(message.content);
  const mentions = message.mentions ?? [];
  switch (message.message_type) {
    case 'text': {
      const t = TextContent.safeParse(content);
      if (!t.success) return { error: 'event.message.content: not a text content JSON ({"text": ...})' };
      return textComponents(storableText(t.data.text), mentions, botName, botAccountId);
    }
    case 'image': {
      const i = ImageContent.safeParse(content);
      if (!i.success) return { error: 'event.message.content: not an image content JSON ({"image_key": ...})' };
      // The image key names the picture; `withImages` (the adapter) fetches it with the app's token.
      return [pendingImage(i.data.image_key)];
    }
    case 'post': {
      const p = PostContent.safeParse(content);
      if (!p.success) return { error: 'event.message.content: not a post content JSON ({"content": [[...]]})' };
      const out: MessageComponent[] = [];
      for (const line of p.data.content) {
        for (const el of line) {
          if (el.tag === 'text' && typeof el.text === 'string') out.push(...textComponents(storableText(el.text), mentions, botName, botAccountId));
          else if (el.tag === 'at' && typeof el.user_id === 'string') {
            const at = mentionAt(el.user_id, mentions, botName, botAccountId);
            if (at) out.push(at);
          } else if (el.tag === 'img' && typeof el.image_key === 'string') out.push(pendingImage(el.image_key));
        }
      }
      return out;
    }
    default:
      return null;
  }
}

/**
 * A decrypted event body as LangBot's lark adapter reads it: `url_verification` is a challenge;
 * `im.message.receive_v1` (schema 2.0) a message, p2p → a person chat keyed by the sender's open_id,
 * group → a group chat keyed by chat_id. A mention of the bot (by `bot_name`) becomes an At of the
 * bot's account id, so the group's at-bot rule matches. An app's message (the bot's own) is ignored.
 */
export function parseLarkBody(raw: unknown, botName: string, botAccountId: string): LarkParsed {
  const head = z.object({ type: z.string().max(100).optional(), schema: z.string().max(20).optional() }).loose().safeParse(raw);
  if (!head.success) return { kind: 'malformed', error: issues(head.error) };
  if (head.data.type === 'url_verification') {
    const v = UrlVerification.safeParse(raw);
    return v.success ? { kind: 'challenge', challenge: v.data.challenge, token: v.data.token } : { kind: 'malformed', error: issues(v.error) };
  }
  const parsed = EventV2.safeParse(raw);
  if (!parsed.success) return { kind: 'malformed', error: issues(parsed.error) };
  const { header } = parsed.data;
  const eventId = header.event_id;
  if (header.event_type !== 'im.message.receive_v1') return { kind: 'ignored', eventId, token: header.token };
  const ev = MessageEvent.safeParse(parsed.data.event);
  if (!ev.success) return { kind: 'malformed', error: issues(ev.error, 'event') };
  const { sender, message } = ev.data;
  if (sender.sender_type !== undefined && sender.sender_type !== 'user') return { kind: 'ignored', eventId, token: header.token };
  const group = message.chat_type === 'group';
  if (!group && message.chat_type !== 'p2p') return { kind: 'ignored', eventId, token: header.token };
  const chain = contentComponents(message, botName, botAccountId);
  if (chain !== null && !Array.isArray(chain)) return { kind: 'malformed', error: chain.error };
  if (chain === null || chain.length === 0) return { kind: 'ignored', eventId, token: header.token };
  const senderId = sender.sender_id.open_id;
  return {
    kind: 'message',
    token: header.token,
    inbound: {
      eventId,
      sessionId: group ? message.chat_id : senderId,
      launcherType: group ? 'group' : 'person',
      senderId,
      // LangBot's lark adapter names the sender by the union id (the event carries no name).
      senderName: (sender.sender_id.union_id ?? senderId).slice(0, LIMITS.nameChars),
      ...(group ? { groupName: message.chat_id.slice(0, LIMITS.nameChars) } : {}),
      messageId: message.message_id,
      messageChain: storableChain(chain),
    },
  };
}

/**
 * The query a message becomes, the same whether it came to the webhook or over the long connection:
 * the reply answers the message, and the event_id (the same in every delivery of one event) is the
 * dedup id, so a redelivery is dropped as a duplicate.
 */
export function larkQuery(m: LarkInbound, stream: boolean): InboundQuery {
  return inboundQuery(m, { replyTo: m.messageId, dedupId: m.eventId, stream });
}
