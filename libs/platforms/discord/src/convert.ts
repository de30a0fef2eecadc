import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageChain, type MessageComponent } from '@conveyor/contracts';
import { chainToMessageText, type InboundQuery } from '@conveyor/platform-kit';

const Snowflake = z.string().regex(/^\d{1,20}$/, 'a Discord snowflake id');
const User = z.looseObject({
  id: Snowflake,
  username: z.string().max(1_000).default(''),
  global_name: z.string().max(1_000).nullish(),
  bot: z.boolean().optional(),
});

/** A `MESSAGE_CREATE` dispatch, with what a query needs. */
export const DiscordMessage = z.looseObject({
  id: Snowflake,
  channel_id: Snowflake,
  guild_id: Snowflake.optional(),
  author: User,
  member: z.looseObject({ nick: z.string().max(1_000).nullish() }).optional(),
  content: z.string().max(100_000).default(''),
  timestamp: z.string().max(100).optional(),
  mentions: z.array(User).max(1_000).default([]),
  attachments: z.array(z.looseObject({
    id: Snowflake,
    filename: z.string().max(1_000).default(''),
    url: z.string().max(10_000),
    content_type: z.string().max(200).optional(),
    size: z.number().int().nonnegative().optional(),
  })).max(100).default([]),
});
export type DiscordMessage = z.output<typeof DiscordMessage>;

const IMAGE_EXT = /\.(png|jpe?g|gif|webp|bmp)(\?|$)/i;
const MENTION = /<@!?(\d{1,20})>|@everyone|@here/g;
const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);

/**
 * A message's content and attachments as LangBot's chain: a Source, text around mentions as Plain,
 * `<@id>` → At (the bot's own user → At of the Conveyor bot id, which the at-bot rule looks for),
 * `@everyone`/`@here` → AtAll, image attachments → Image by URL, other attachments → File.
 */
export function messageToChain(m: DiscordMessage, botUserId: string, botId: string): MessageChain {
  const seconds = m.timestamp ? Math.floor(Date.parse(m.timestamp) / 1000) : NaN;
  const chain: MessageChain = [{ type: 'Source', id: m.id, timestamp: Number.isFinite(seconds) ? seconds : Math.floor(Date.now() / 1000) }];
  const names = new Map(m.mentions.map((u) => [u.id, u.global_name || u.username]));
  let at = 0;
  for (const match of m.content.matchAll(MENTION)) {
    if (match.index > at) chain.push({ type: 'Plain', text: m.content.slice(at, match.index) });
    const id = match[1];
    chain.push(id === undefined ? { type: 'AtAll' } : { type: 'At', target: id === botUserId ? botId : id, display: names.get(id) ?? '' });
    at = match.index + match[0].length;
  }
  if (at < m.content.length) chain.push({ type: 'Plain', text: m.content.slice(at) });
  for (const a of m.attachments) {
    const image = a.content_type ? a.content_type.startsWith('image/') : IMAGE_EXT.test(a.filename || a.url);
    chain.push(image
      ? { type: 'Image', image_id: a.id, url: a.url, path: '', base64: '' }
      : { type: 'File', id: a.id, name: a.filename, size: a.size ?? 0, url: a.url, path: '', base64: '' });
  }
  return chain;
}

/**
 * The query a message becomes, as LangBot's discord adapter sees it: no guild → a person chat of the
 * author, a guild channel → a group chat of the channel (every message; the pipeline's group rules
 * decide which to answer). The de-duplication id is the message id, unique per bot.
 */
export function messageToQuery(m: DiscordMessage, botUserId: string, botId: string, stream: boolean, channelName = ''): InboundQuery {
  const group = m.guild_id !== undefined;
  const name = (group ? m.member?.nick : undefined) || m.author.global_name || m.author.username || m.author.id;
  return {
    sessionId: group ? m.channel_id : m.author.id,
    launcherType: group ? 'group' : 'person',
    senderId: m.author.id,
    senderName: cut(name),
    // LangBot names the group after the channel; a name that could not be read falls back to its id.
    ...(group ? { groupName: cut(channelName || `#${m.channel_id}`) } : {}),
    messageChain: storableChain(messageToChain(m, botUserId, botId)),
    replyTo: m.id,
    dedupId: m.id,
    stream,
  };
}

/** A reply chain as message content: text, At → `<@id>`, images and files by URL on their own line. */
export function chainToContent(chain: readonly MessageComponent[]): string {
  return chainToMessageText(chain, { at: (id) => `<@${id}>`, atAll: '@everyone' });
}
