import { z } from 'zod';
import { storableChain, storableText, type LauncherType, type MessageComponent } from '@conveyor/contracts';

/** LINE ids: `U`/`C`/`R` and 32 hex digits; bounded loosely so a format change does not drop messages. */
const LineId = z.string().regex(/^[A-Za-z0-9]{1,64}$/, 'a LINE id');

const Source = z.discriminatedUnion('type', [
  z.object({ type: z.literal('user'), userId: LineId }).loose(),
  z.object({ type: z.literal('group'), groupId: LineId, userId: LineId.optional() }).loose(),
  z.object({ type: z.literal('room'), roomId: LineId, userId: LineId.optional() }).loose(),
]);

const Mentionee = z.object({ index: z.number().int().min(0), length: z.number().int().min(1), isSelf: z.boolean().optional() }).loose();

const TextMessageEvent = z
  .object({
    type: z.literal('message'),
    webhookEventId: z.string().min(1).max(200),
    replyToken: z.string().min(1).max(200).optional(),
    source: Source,
    message: z
      .object({
        type: z.literal('text'),
        id: z.string().min(1).max(200),
        text: z.string(),
        mention: z.object({ mentionees: z.array(Mentionee).max(100) }).loose().optional(),
      })
      .loose(),
  })
  .loose();

const Body = z.object({ destination: z.string().max(200).optional(), events: z.array(z.object({ type: z.string().max(100) }).loose()).max(100) }).loose();

export interface LineInbound {
  eventId: string;
  /** The single-use token a reply within about a minute is sent with; absent on redeliveries of old events. */
  replyToken?: string;
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageChain: MessageComponent[];
}

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');

/** The text without the spans that mention the bot (`isSelf`), whose presence becomes an `At` of the bot. */
function withoutSelfMentions(text: string, mentionees: readonly z.infer<typeof Mentionee>[]): { text: string; mentioned: boolean } {
  const self = mentionees.filter((m) => m.isSelf === true).sort((a, b) => b.index - a.index);
  let out = text;
  for (const m of self) out = out.slice(0, m.index) + out.slice(m.index + m.length);
  return { text: out, mentioned: self.length > 0 };
}

/**
 * A webhook body's text messages as LangBot's line adapter reads them: a `user` source is a person
 * chat keyed by the user, a `group` or `room` a group chat keyed by the group or room. A mention of
 * the bot becomes an `At` of the bot (its id, the pipeline's account id for this adapter) and leaves
 * the text. Other events (follows, stickers, images, postbacks) are skipped; an empty `events` list
 * is LINE's webhook verification. A message event that does not parse makes the body malformed.
 */
export function parseLineBody(raw: unknown, botAccountId: string): { ok: true; inbound: LineInbound[] } | { ok: false; error: string } {
  const body = Body.safeParse(raw);
  if (!body.success) return { ok: false, error: issues(body.error) };
  const inbound: LineInbound[] = [];
  for (const [i, event] of body.data.events.entries()) {
    if (event.type !== 'message') continue;
    const message = z.object({ message: z.object({ type: z.string().max(100) }).loose() }).loose().safeParse(event);
    if (!message.success) return { ok: false, error: `events.${i}: ${issues(message.error)}` };
    if (message.data.message.type !== 'text') continue;
    const parsed = TextMessageEvent.safeParse(event);
    if (!parsed.success) return { ok: false, error: `events.${i}: ${issues(parsed.error)}` };
    const e = parsed.data;
    const { text, mentioned } = withoutSelfMentions(e.message.text, e.message.mention?.mentionees ?? []);
    const clean = storableText(text);
    if (!clean.trim()) continue;
    const src = e.source;
    const sessionId = src.type === 'user' ? src.userId : src.type === 'group' ? src.groupId : src.roomId;
    const senderId = src.userId ?? sessionId;
    const chain: MessageComponent[] = mentioned ? [{ type: 'At', target: botAccountId, display: '' }, { type: 'Plain', text: clean }] : [{ type: 'Plain', text: clean }];
    inbound.push({
      eventId: e.webhookEventId,
      ...(e.replyToken !== undefined ? { replyToken: e.replyToken } : {}),
      sessionId,
      launcherType: src.type === 'user' ? 'person' : 'group',
      senderId,
      // LangBot's line adapter names the sender by the user id (the event carries no name).
      senderName: senderId,
      ...(src.type === 'user' ? {} : { groupName: sessionId }),
      messageChain: storableChain(chain),
    });
  }
  return { ok: true, inbound };
}
