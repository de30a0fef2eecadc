import { createHash } from 'node:crypto';
import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { DingtalkApi, DingtalkApiError, type RobotReply } from './api.js';
import { DingtalkConfigSchema, streamsReplies, type DingtalkConfig } from './config.js';
import { sessionWebhookOf } from './parse.js';
import { DINGTALK } from './name.js';

/**
 * Characters of one robot message: DingTalk refuses a markdown text over 5,000 characters (and a
 * text over 20,000 bytes), so longer replies go out as several messages.
 */
export const DINGTALK_MESSAGE_CHARS = 4_000;
/** Messages of one reply, at most: a reply longer than this is cut, and says so. */
const MAX_PARTS = 10;
const TRUNCATED = '\n\n… (truncated)';
/** A session webhook this close to its expiry is not used: the reply takes the robot OpenAPI instead. */
const WEBHOOK_MARGIN_MS = 60_000;
/** LangBot updates a streamed DingTalk card every 8th chunk, and with the final one. */
export const DINGTALK_CARD_UPDATE_EVERY = 8;

/**
 * The reply's text as LangBot's dingtalk converter makes it: Plain text as is, an At as `@<user id>`
 * (DingTalk shows the person's name for an id it is told to mention), an image as markdown when
 * replies are markdown (dropped in plain text), a forward's messages one after another.
 */
export function renderReply(chain: MessageChain, markdown: boolean): RobotReply {
  const atUserIds: string[] = [];
  const walk = (components: MessageChain): string => components.map((c) => {
    switch (c.type) {
      case 'Plain':
        return c.text;
      case 'At':
        atUserIds.push(String(c.target));
        return `@${String(c.target)} `;
      case 'Image':
        return markdown && c.url ? `\n![image](${c.url})\n` : '';
      case 'Forward':
        return c.node_list.map((n) => walk(n.message_chain)).join('');
      default:
        return '';
    }
  }).join('');
  const text = walk(chain);
  return { markdown, text, atUserIds: [...new Set(atUserIds)] };
}

/** `text` in pieces of at most `max` characters, a piece ending after a line break in its second half where there is one; at most `maxParts`. */
export function splitText(text: string, max = DINGTALK_MESSAGE_CHARS, maxParts = MAX_PARTS): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest && parts.length < maxParts) {
    let end = Math.min(rest.length, max);
    if (end < rest.length) {
      const newline = rest.lastIndexOf('\n', end - 1);
      if (newline >= end / 2) end = newline + 1;
      // Never between the halves of a surrogate pair.
      else if (/[\uD800-\uDBFF]/.test(rest.charAt(end - 1))) end -= 1;
    }
    parts.push(rest.slice(0, end));
    rest = rest.slice(end);
  }
  if (rest) parts.push(`${(parts.pop() ?? '').slice(0, max - TRUNCATED.length)}${TRUNCATED}`);
  return parts;
}

/**
 * One whole reply, piece by piece, resuming after the pieces a previous attempt sent (kept in `ctx.state`).
 * Each piece answers through the session webhook while it is valid, else through the robot OpenAPI.
 */
export async function sendWholeReply(api: DingtalkApi, config: DingtalkConfig, route: ReplyRoute, message: MessageChain, ctx?: Pick<DeliveryContext, 'state' | 'signal'>, now: () => number = Date.now): Promise<void> {
  const rendered = renderReply(message, config.markdown_card);
  if (!rendered.text.trim()) return;
  const pieces = splitText(rendered.text);
  const sent = Number((await ctx?.state.get('dt:sent')) ?? '0');
  for (let i = sent; i < pieces.length; i++) {
    // Only the first piece mentions anyone.
    await sendOne(api, config, route, { ...rendered, text: pieces[i] ?? '', atUserIds: i === 0 ? rendered.atUserIds : [] }, now, ctx?.signal);
    await ctx?.state.set('dt:sent', String(i + 1));
  }
}

async function sendOne(api: DingtalkApi, config: DingtalkConfig, route: ReplyRoute, reply: RobotReply, now: () => number, signal?: AbortSignal): Promise<void> {
  const webhook = sessionWebhookOf(route.replyTo);
  if (webhook && webhook.expiresAt > now() + WEBHOOK_MARGIN_MS) {
    try {
      return await api.sendBySession(webhook.url, reply, signal);
    } catch (err) {
      // A webhook DingTalk refuses (its session ended early) does not stop the reply: the OpenAPI still reaches the chat.
      if (!(err instanceof DingtalkApiError) || err.retryable) throw err;
    }
  }
  await api.sendByRobot(config, targetOf(route), reply, signal);
}

/** Where a route's replies go through the robot OpenAPI: the group conversation, or the person (staff id). */
const targetOf = (route: ReplyRoute) => ({ group: route.launcherType === 'group', id: route.sessionId });

/** The AI card of a reply: the same id for every part of it on every replica, so a part sent again updates the same card. */
const cardIdOf = (queryId: string) => createHash('sha256').update(`dingtalk-card:${queryId}`).digest('hex').slice(0, 32);

/**
 * DingTalk outbound, straight from the dispatcher (replies are HTTP; no held connection is needed).
 * A whole reply answers through the message's session webhook while it is valid, else through the
 * robot OpenAPI (`oToMessages/batchSend` to the person, `groupMessages/send` into the group), as
 * markdown when `markdown_card` (LangBot's default) or text, split at 4,000 characters; how many
 * pieces went out is kept with the reply, so a part sent again goes on where it stopped. With
 * `enable-stream-reply` and a `card_template_id`, the reply streams into an AI card: created and
 * delivered with the first snapshot, its `content` replaced every 8th snapshot (as LangBot) and
 * finalized with the whole text.
 */
export class DingtalkAdapter implements PlatformAdapter {
  readonly name = DINGTALK;
  private readonly api: DingtalkApi;

  constructor(
    private readonly configs: BotConfigs,
    fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {
    this.api = new DingtalkApi(fetchImpl, now);
  }

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = DingtalkConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `dingtalk bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    const config = parsed.data;
    try {
      if (reply.stream && streamsReplies(config)) return await this.streamToCard(config, route, reply, ctx);
      // Stream off: only the final part of a streamed reply shows.
      if (reply.stream && !reply.isFinal) return { delivered: true };
      await sendWholeReply(this.api, config, route, reply.message, ctx, this.now);
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `dingtalk: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  private async streamToCard(config: DingtalkConfig, route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const text = renderReply(reply.message, true).text;
    const cardId = cardIdOf(ctx.queryId);
    if ((await ctx.state.get('dt:card')) !== '1') {
      if (!text.trim() && !reply.isFinal) return { delivered: true };
      try {
        await this.api.createCard(config, cardId, targetOf(route), ctx.signal);
      } catch (err) {
        // Sent again after a crash that came between the creation and its note: DingTalk refuses the
        // card id it already has, and the update below shows whether the card is there.
        if (!(err instanceof DingtalkApiError) || err.retryable) throw err;
      }
      await ctx.state.set('dt:card', '1');
    }
    const last = Number((await ctx.state.get('dt:ord')) ?? '0');
    const bucket = (n: number) => Math.floor((n - 1) / DINGTALK_CARD_UPDATE_EVERY);
    if (!reply.isFinal && last > 0 && bucket(ctx.chunkOrdinal) <= bucket(last)) return { delivered: true };
    const guid = createHash('sha256').update(`${ctx.queryId}:${ctx.partKey}`).digest('hex').slice(0, 32);
    await this.api.streamCard(config, cardId, { guid, content: text, finalize: reply.isFinal }, ctx.signal);
    await ctx.state.set('dt:ord', String(ctx.chunkOrdinal));
    return { delivered: true };
  }
}
