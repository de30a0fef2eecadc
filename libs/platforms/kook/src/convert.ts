import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageChain, type MessageComponent } from '@conveyor/contracts';
import { chainToMessageText, type InboundQuery } from '@conveyor/platform-kit';

const Id = z.string().min(1).max(64);

/** KOOK's message types of an event's `type` (255 is a system event, no message). */
export const KOOK_TYPE = { TEXT: 1, IMAGE: 2, VIDEO: 3, FILE: 4, AUDIO: 8, KMARKDOWN: 9, CARD: 10, SYSTEM: 255 } as const;

/** The `d` of an event (signal 0) that is a message, with what a query needs. */
export const KookMessageEvent = z.looseObject({
  channel_type: z.enum(['GROUP', 'PERSON', 'BROADCAST']),
  type: z.number().int(),
  /** The channel (GROUP) or, for a PERSON message, the bot's own user id. */
  target_id: Id,
  author_id: Id,
  content: z.string().max(100_000).default(''),
  msg_id: z.string().min(1).max(128),
  msg_timestamp: z.number().nonnegative().optional(),
  extra: z.looseObject({
    guild_id: z.string().max(64).optional(),
    channel_name: z.string().max(1_000).optional(),
    mention: z.array(z.string().max(64)).max(1_000).default([]),
    mention_all: z.boolean().default(false),
    mention_here: z.boolean().default(false),
    author: z.looseObject({
      id: z.string().max(64).optional(),
      username: z.string().max(1_000).default(''),
      nickname: z.string().max(1_000).default(''),
      bot: z.boolean().default(false),
    }).optional(),
  }).default({ mention: [], mention_all: false, mention_here: false }),
});
export type KookMessageEvent = z.output<typeof KookMessageEvent>;

/** A system event (`type` 255) or a message of no channel a bot answers: not published, not malformed. */
export function isMessageEvent(d: unknown): boolean {
  const t = z.looseObject({ type: z.number(), channel_type: z.string() }).safeParse(d);
  return t.success && t.data.type !== KOOK_TYPE.SYSTEM && t.data.channel_type !== 'BROADCAST';
}

const MENTION = /\(met\)([^()\s]{1,64})\(met\)/g;
const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);

/**
 * A message's content as LangBot's chain: a Source, text around KMarkdown mentions as Plain,
 * `(met)id(met)` → At (the bot's own user → At of the Conveyor bot id, which the at-bot rule looks
 * for), `(met)all(met)`/`(met)here(met)` → AtAll; a plain text message that mentions the bot only in
 * `extra.mention` gets that At first. Image messages become an Image by URL, files a File.
 */
export function messageToChain(m: KookMessageEvent, botUserId: string, botId: string): MessageChain {
  const seconds = m.msg_timestamp !== undefined ? Math.floor(m.msg_timestamp / 1000) : Math.floor(Date.now() / 1000);
  const chain: MessageChain = [{ type: 'Source', id: m.msg_id, timestamp: seconds }];
  if (m.type === KOOK_TYPE.IMAGE) {
    chain.push({ type: 'Image', image_id: m.msg_id, url: m.content, path: '', base64: '' });
    return chain;
  }
  if (m.type === KOOK_TYPE.FILE || m.type === KOOK_TYPE.VIDEO || m.type === KOOK_TYPE.AUDIO) {
    chain.push({ type: 'File', id: m.msg_id, name: '', size: 0, url: m.content, path: '', base64: '' });
    return chain;
  }
  let at = 0;
  let botMentioned = false;
  for (const match of m.content.matchAll(MENTION)) {
    if (match.index > at) chain.push({ type: 'Plain', text: m.content.slice(at, match.index) });
    const id = match[1];
    if (id === 'all' || id === 'here') chain.push({ type: 'AtAll' });
    else {
      botMentioned ||= id === botUserId;
      chain.push({ type: 'At', target: id === botUserId ? botId : id, display: '' });
    }
    at = match.index + match[0].length;
  }
  if (at < m.content.length) chain.push({ type: 'Plain', text: m.content.slice(at) });
  if (!botMentioned && m.extra.mention.includes(botUserId)) chain.splice(1, 0, { type: 'At', target: botId, display: '' });
  return chain;
}

/**
 * The query a message becomes, as LangBot's kook adapter sees it: a PERSON message → a person chat of
 * the author, a GROUP message → a group chat of the channel, named after it. The de-duplication id
 * is the message id, unique per bot, so a replay after a resume is one query.
 */
export function messageToQuery(m: KookMessageEvent, botUserId: string, botId: string): InboundQuery {
  const group = m.channel_type === 'GROUP';
  const author = m.extra.author;
  return {
    sessionId: group ? m.target_id : m.author_id,
    launcherType: group ? 'group' : 'person',
    senderId: m.author_id,
    senderName: cut(author?.nickname || author?.username || m.author_id),
    ...(group ? { groupName: cut(m.extra.channel_name || `#${m.target_id}`) } : {}),
    messageChain: storableChain(messageToChain(m, botUserId, botId)),
    replyTo: m.msg_id,
    dedupId: m.msg_id,
  };
}

/** A reply chain as KMarkdown: text as it is, At → `(met)id(met)`, AtAll → `(met)all(met)`, media by URL on its own line. */
export function chainToKMarkdown(chain: readonly MessageComponent[]): string {
  return chainToMessageText(chain, { at: (id) => `(met)${id}(met)`, atAll: '(met)all(met)' });
}
