import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageChain } from '@conveyor/contracts';
import type { InboundQuery } from '@conveyor/platform-kit';

const Id = z.string().min(1).max(128);
const Attachment = z.looseObject({ content_type: z.string().max(200).default(''), filename: z.string().max(1_000).default(''), url: z.string().max(10_000), size: z.number().int().nonnegative().optional() });
const Attachments = z.array(Attachment).max(100).default([]);
const Content = z.string().max(100_000).default('');

/** A QQ group message that @-mentions the bot (the only group messages a bot gets). */
const GroupAt = z.looseObject({ id: Id, group_openid: Id, content: Content, timestamp: z.string().max(100).optional(), author: z.looseObject({ member_openid: Id }), attachments: Attachments });
/** A private (C2C) message to the bot. */
const C2c = z.looseObject({ id: Id, content: Content, timestamp: z.string().max(100).optional(), author: z.looseObject({ user_openid: Id }), attachments: Attachments });
const GuildAuthor = z.looseObject({ id: Id, username: z.string().max(1_000).default(''), bot: z.boolean().default(false) });
/** A guild channel message @-mentioning the bot, or a guild direct message. */
const Guild = z.looseObject({
  id: Id,
  channel_id: Id,
  guild_id: Id,
  content: Content,
  timestamp: z.string().max(100).optional(),
  author: GuildAuthor,
  member: z.looseObject({ nick: z.string().max(1_000).nullish() }).optional(),
  mentions: z.array(GuildAuthor).max(1_000).default([]),
  attachments: Attachments,
});

/** The events that carry messages, and the session kind their replies go to. */
export const QQ_MESSAGE_EVENTS = ['GROUP_AT_MESSAGE_CREATE', 'C2C_MESSAGE_CREATE', 'AT_MESSAGE_CREATE', 'DIRECT_MESSAGE_CREATE'] as const;

/**
 * Where a reply goes, written into the session id so any dispatcher can route it without state: a
 * group (`group:<group_openid>`), a user's private chat (`c2c:<user_openid>`), a guild channel
 * (`channel:<channel_id>`), a guild direct-message session (`dm:<guild_id>`).
 */
export type QqTarget = { kind: 'group' | 'c2c' | 'channel' | 'dm'; id: string };

const KINDS = ['group', 'c2c', 'channel', 'dm'] as const;

export function targetOf(sessionId: string): QqTarget | undefined {
  const m = /^([a-z0-9]+):(.+)$/.exec(sessionId);
  const kind = KINDS.find((k) => k === m?.[1]);
  return m && kind ? { kind, id: m[2] } : undefined;
}

/** What one dispatch comes to: a query, an event that is no message (skipped), or a message that does not parse. */
export type DispatchOutcome = { kind: 'query'; query: InboundQuery } | { kind: 'skip'; reason: string } | { kind: 'malformed'; reason: string };

const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);
const seconds = (iso: string | undefined) => {
  const ms = iso ? Date.parse(iso) : NaN;
  return Math.floor((Number.isFinite(ms) ? ms : Date.now()) / 1000);
};
const MENTION = /<@!?([^<>\s]{1,128})>/g;

function attachmentsTo(chain: MessageChain, attachments: z.output<typeof Attachments>) {
  for (const [i, a] of attachments.entries()) {
    const url = a.url.startsWith('//') ? `https:${a.url}` : a.url;
    chain.push(a.content_type.startsWith('image/')
      ? { type: 'Image', image_id: `${i}`, url, path: '', base64: '' }
      : { type: 'File', id: `${i}`, name: a.filename, size: a.size ?? 0, url, path: '', base64: '' });
  }
}

/**
 * A dispatch as LangBot's qqofficial adapter reads it. Group and channel messages reach a bot only
 * when they @-mention it, so their chain starts with an At of the Conveyor bot id (the at-bot rule
 * looks for it); a channel message's `<@!id>` of the bot is that At, other mentions become Ats of
 * their users. The de-duplication id is the message id, so QQ's retries and a replay after a
 * resume are one query.
 */
export function dispatchToQuery(t: string, d: unknown, botId: string): DispatchOutcome {
  const bad = (err: z.ZodError) => ({ kind: 'malformed' as const, reason: `${t}: ${err.issues[0]?.path.join('.') || '(root)'}: ${err.issues[0]?.message ?? 'invalid'}` });
  switch (t) {
    case 'GROUP_AT_MESSAGE_CREATE': {
      const p = GroupAt.safeParse(d);
      if (!p.success) return bad(p.error);
      const m = p.data;
      const chain: MessageChain = [{ type: 'Source', id: m.id, timestamp: seconds(m.timestamp) }, { type: 'At', target: botId, display: '' }];
      const text = m.content.replace(/^\s+/, '');
      if (text) chain.push({ type: 'Plain', text });
      attachmentsTo(chain, m.attachments);
      return { kind: 'query', query: { sessionId: `group:${m.group_openid}`, launcherType: 'group', senderId: m.author.member_openid, senderName: cut(m.author.member_openid), groupName: cut(m.group_openid), messageChain: storableChain(chain), replyTo: m.id, dedupId: m.id } };
    }
    case 'C2C_MESSAGE_CREATE': {
      const p = C2c.safeParse(d);
      if (!p.success) return bad(p.error);
      const m = p.data;
      const chain: MessageChain = [{ type: 'Source', id: m.id, timestamp: seconds(m.timestamp) }];
      if (m.content.trim()) chain.push({ type: 'Plain', text: m.content.trim() });
      attachmentsTo(chain, m.attachments);
      return { kind: 'query', query: { sessionId: `c2c:${m.author.user_openid}`, launcherType: 'person', senderId: m.author.user_openid, senderName: cut(m.author.user_openid), messageChain: storableChain(chain), replyTo: m.id, dedupId: m.id } };
    }
    case 'AT_MESSAGE_CREATE':
    case 'DIRECT_MESSAGE_CREATE': {
      const p = Guild.safeParse(d);
      if (!p.success) return bad(p.error);
      const m = p.data;
      if (m.author.bot) return { kind: 'skip', reason: 'a bot\'s message' };
      const channel = t === 'AT_MESSAGE_CREATE';
      const bots = new Set(m.mentions.filter((u) => u.bot).map((u) => u.id));
      const chain: MessageChain = [{ type: 'Source', id: m.id, timestamp: seconds(m.timestamp) }];
      if (channel) chain.push({ type: 'At', target: botId, display: '' });
      let at = 0;
      const names = new Map(m.mentions.map((u) => [u.id, u.username]));
      for (const match of m.content.matchAll(MENTION)) {
        if (match.index > at) chain.push({ type: 'Plain', text: m.content.slice(at, match.index) });
        const id = match[1];
        // The bot's own mention is the At the chain starts with.
        if (!bots.has(id)) chain.push({ type: 'At', target: id, display: names.get(id) ?? '' });
        at = match.index + match[0].length;
      }
      if (at < m.content.length) chain.push({ type: 'Plain', text: m.content.slice(at) });
      const first = chain.findIndex((c) => c.type === 'Plain');
      if (first >= 0) {
        const c = chain[first];
        if (c.type === 'Plain') c.text = c.text.replace(/^\s+/, '');
        if (c.type === 'Plain' && !c.text) chain.splice(first, 1);
      }
      attachmentsTo(chain, m.attachments);
      const name = cut(m.member?.nick || m.author.username || m.author.id);
      return {
        kind: 'query',
        query: channel
          ? { sessionId: `channel:${m.channel_id}`, launcherType: 'group', senderId: m.author.id, senderName: name, groupName: cut(`#${m.channel_id}`), messageChain: storableChain(chain), replyTo: m.id, dedupId: m.id }
          : { sessionId: `dm:${m.guild_id}`, launcherType: 'person', senderId: m.author.id, senderName: name, messageChain: storableChain(chain), replyTo: m.id, dedupId: m.id },
      };
    }
    default:
      return { kind: 'skip', reason: `event ${t.slice(0, 64)} carries no message` };
  }
}
