import { z } from 'zod';
import { LIMITS, storableChain, storableText } from '@conveyor/contracts';
import type { InboundQuery } from '@conveyor/platform-kit';
import { contentToChain } from './elements.js';

const Id = z.string().min(1).max(200);

/** Satori's channel types: 0 a text channel (a group), 1 a direct chat. */
export const SATORI_DIRECT = 1;

/** A `message-created` event with what a query needs. */
export const SatoriMessageEvent = z.looseObject({
  type: z.literal('message-created'),
  timestamp: z.number().nonnegative().optional(),
  channel: z.looseObject({ id: Id, type: z.number().int().default(0), name: z.string().max(1_000).optional() }),
  guild: z.looseObject({ id: Id, name: z.string().max(1_000).optional() }).optional(),
  user: z.looseObject({ id: Id, name: z.string().max(1_000).optional(), nick: z.string().max(1_000).optional(), is_bot: z.boolean().optional() }),
  member: z.looseObject({ nick: z.string().max(1_000).nullish(), name: z.string().max(1_000).nullish() }).optional(),
  message: z.looseObject({ id: Id, content: z.string().max(100_000).default('') }),
});
export type SatoriMessageEvent = z.output<typeof SatoriMessageEvent>;

const cut = (s: string) => storableText(s).slice(0, LIMITS.nameChars);

/**
 * The query a message becomes: a direct channel → a person chat of the user (replies go to that
 * channel, so the session id is the channel id), any other channel → a group chat of the channel,
 * named after it. The dedup id is the message id within its platform.
 */
export function messageToQuery(e: SatoriMessageEvent, selfId: string, botId: string): InboundQuery {
  const direct = e.channel.type === SATORI_DIRECT;
  const name = e.member?.nick || e.member?.name || e.user.nick || e.user.name || e.user.id;
  return {
    sessionId: e.channel.id,
    launcherType: direct ? 'person' : 'group',
    senderId: e.user.id,
    senderName: cut(name),
    ...(direct ? {} : { groupName: cut(e.channel.name || e.guild?.name || `#${e.channel.id}`) }),
    messageChain: storableChain([{ type: 'Source', id: e.message.id, timestamp: Math.floor((e.timestamp ?? Date.now()) / 1000) }, ...contentToChain(e.message.content, selfId, botId)]),
    replyTo: e.message.id,
    dedupId: e.message.id,
  };
}
