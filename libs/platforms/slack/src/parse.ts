import { z } from 'zod';
import { LIMITS, storableChain, storableText, type LauncherType, type MessageComponent } from '@conveyor/contracts';
import { inboundQuery, type InboundQuery } from '@conveyor/platform-kit';

/** Slack ids (users, channels, bots, teams) are short upper-case alphanumerics. */
const SlackId = z.string().regex(/^[A-Z0-9]{1,64}$/, 'a Slack id');

const SlackEvent = z
  .object({
    type: z.string().max(100),
    subtype: z.string().max(100).optional(),
    user: SlackId.optional(),
    bot_id: z.string().max(100).optional(),
    channel: SlackId.optional(),
    channel_type: z.string().max(100).optional(),
    text: z.string().optional(),
    ts: z.string().max(100).optional(),
    blocks: z.array(z.unknown()).max(100).optional(),
  })
  .loose();

const EventCallback = z
  .object({
    type: z.literal('event_callback'),
    event_id: z.string().min(1).max(200),
    event: SlackEvent,
    /** Who the app acts as in this workspace; its bot user's own messages come back as events too. */
    authorizations: z.array(z.object({ user_id: z.string().max(100).optional() }).loose()).max(100).optional(),
  })
  .loose();

const UrlVerification = z.object({ type: z.literal('url_verification'), challenge: z.string().min(1).max(1000) }).loose();

export interface SlackInbound {
  eventId: string;
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageTs: string;
  messageChain: MessageComponent[];
}

export type SlackParsed =
  | { kind: 'challenge'; challenge: string }
  | { kind: 'message'; inbound: SlackInbound }
  /** A valid delivery that asks for no answer (another event type, the bot's own message, an edit). */
  | { kind: 'ignored'; eventId?: string }
  | { kind: 'malformed'; error: string };

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * The message text as LangBot reads it: the `text` and `link` elements of the rich-text sections, so a
 * mention of the bot (a `user` element) is left out. Without blocks, `text` with `<@U…>` mentions removed.
 */
export function slackText(event: { text?: string | undefined; blocks?: unknown[] | undefined }): string {
  const sections: string[] = [];
  for (const block of event.blocks ?? []) {
    if (!isRecord(block) || block.type !== 'rich_text' || !Array.isArray(block.elements)) continue;
    for (const section of block.elements) {
      if (!isRecord(section) || section.type !== 'rich_text_section' || !Array.isArray(section.elements)) continue;
      let text = '';
      for (const el of section.elements) {
        if (!isRecord(el)) continue;
        if (el.type === 'text' && typeof el.text === 'string') text += el.text;
        else if (el.type === 'link' && typeof el.url === 'string') text += el.url;
      }
      sections.push(text);
    }
  }
  if (sections.length) return sections.join('\n');
  return (event.text ?? '').replace(/<@[A-Z0-9]+>/g, '');
}

/** Subtypes that carry a person's new message; every other (edits, deletions, joins, bot posts) is no question. */
const MESSAGE_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

/**
 * An Events API body as LangBot's slack adapter reads it: a direct message (`message` in an `im`) is
 * a person chat keyed by the im channel, a mention (`app_mention`) a group chat keyed by the channel,
 * with an `At` of the bot (the bot id, the pipeline's account id for this adapter) so the group's
 * at-bot rule matches. Channel `message` events are ignored: a mention arrives as `app_mention` too.
 */
export function parseSlackBody(raw: unknown, botAccountId: string): SlackParsed {
  const head = z.object({ type: z.string().max(100) }).loose().safeParse(raw);
  if (!head.success) return { kind: 'malformed', error: issues(head.error) };
  if (head.data.type === 'url_verification') {
    const v = UrlVerification.safeParse(raw);
    return v.success ? { kind: 'challenge', challenge: v.data.challenge } : { kind: 'malformed', error: issues(v.error) };
  }
  if (head.data.type !== 'event_callback') return { kind: 'ignored' };
  const parsed = EventCallback.safeParse(raw);
  if (!parsed.success) return { kind: 'malformed', error: issues(parsed.error) };
  const { event, event_id: eventId } = parsed.data;
  const selfIds = new Set((parsed.data.authorizations ?? []).map((a) => a.user_id).filter((id) => id !== undefined));
  if (event.bot_id !== undefined || !MESSAGE_SUBTYPES.has(event.subtype) || (event.user !== undefined && selfIds.has(event.user))) {
    return { kind: 'ignored', eventId };
  }
  const direct = event.type === 'message' && event.channel_type === 'im';
  const mention = event.type === 'app_mention';
  if (!direct && !mention) return { kind: 'ignored', eventId };
  if (!event.user || !event.channel) return { kind: 'malformed', error: 'event.user and event.channel are required' };
  const text = storableText(slackText(event));
  if (!text.trim()) return { kind: 'ignored', eventId };
  const chain: MessageComponent[] = mention ? [{ type: 'At', target: botAccountId, display: '' }, { type: 'Plain', text }] : [{ type: 'Plain', text }];
  return {
    kind: 'message',
    inbound: {
      eventId,
      sessionId: event.channel,
      launcherType: mention ? 'group' : 'person',
      senderId: event.user,
      // LangBot's slack adapter names the sender by the user id (the event carries no name).
      senderName: event.user.slice(0, LIMITS.nameChars),
      ...(mention ? { groupName: event.channel } : {}),
      messageTs: event.ts ?? eventId,
      messageChain: storableChain(chain),
    },
  };
}

/**
 * The query a Slack message becomes, whether it came to the webhook or over Socket Mode: the reply
 * answers the message's ts, and the event_id de-duplicates Slack's redeliveries on either path.
 */
export function slackQuery(m: SlackInbound, stream: boolean): InboundQuery {
  return inboundQuery(m, { replyTo: m.messageTs, dedupId: m.eventId, stream });
}
