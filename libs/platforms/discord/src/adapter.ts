import type { ReplyRoute } from '@conveyor/contracts';
import { GatewayRelayAdapter } from '@conveyor/gateway';
import type { DeliveryContext, OutboundDeps, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { parseDiscordConfig } from './config.js';
import { chainToContent } from './convert.js';
import { channelOf } from './connection.js';
import { DiscordRest, DISCORD_MAX_CONTENT, splitContent } from './rest.js';

/** LangBot edits a streamed Discord message every 8th chunk (Discord allows 5 edits per 5 s) and on the final one. */
export const DISCORD_EDIT_EVERY = 8;

/**
 * Discord outbound. Whole replies (and streamed ones when `enable-stream-reply` is off: only the final
 * part shows) go through the gateway relay to the replica holding the bot's Gateway session, which
 * posts them. A streamed reply is edited in place, which needs no Gateway session: the dispatcher
 * creates the message with the first visible snapshot (a reply to the user's message), edits it with
 * every 8th snapshot, and the final part edits it to the whole text; text past 2,000 characters goes
 * out as further messages. The message id is kept with the reply in Redis, so a part resumed by
 * another replica edits the same message.
 */
export class DiscordAdapter implements PlatformAdapter {
  readonly name = 'discord' as const;
  private readonly relay: GatewayRelayAdapter;

  constructor(private readonly deps: OutboundDeps) {
    this.relay = new GatewayRelayAdapter('discord', { nc: deps.nc, topology: deps.topology, logger: deps.logger });
  }

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = (() => {
      try {
        return parseDiscordConfig(bot.adapterConfig);
      } catch (err) {
        return err instanceof Error ? err : new Error('invalid discord settings');
      }
    })();
    if (parsed instanceof Error) return { delivered: false, reason: `invalid discord settings of bot ${route.botId}: ${parsed.message}` };
    const card = await ctx.state.get('dc:msg');
    if (!reply.stream || !parsed['enable-stream-reply'] || (!card && reply.isFinal)) return this.relay.deliver(route, reply, ctx);
    const rest = new DiscordRest({
      baseUrl: parsed.api_base_url,
      token: parsed.token,
      ...(this.deps.fetchImpl ? { fetchImpl: this.deps.fetchImpl } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      onRateLimited: (r, retryAfterMs) => this.deps.logger.warn({ botId: route.botId, queryId: ctx.queryId, route: r, retryAfterMs }, 'Discord rate limit; waiting as told'),
    });
    const text = chainToContent(reply.message);
    try {
      if (!card) {
        if (!text) return { delivered: true };
        const channel = await channelOf(rest, route);
        const id = await rest.createMessage(channel, text.slice(0, DISCORD_MAX_CONTENT), route.replyTo);
        await ctx.state.set('dc:ch', channel);
        await ctx.state.set('dc:msg', id);
        await ctx.state.set('dc:ord', String(ctx.chunkOrdinal));
        return { delivered: true };
      }
      const channel = (await ctx.state.get('dc:ch')) ?? route.sessionId;
      if (reply.isFinal) {
        if ((await ctx.state.get('dc:fin')) === '1') return { delivered: true };
        const [head = '', ...more] = splitContent(text);
        if (head) await rest.editMessage(channel, card, head);
        const done = Number((await ctx.state.get('dc:more')) ?? 0);
        for (const [i, piece] of more.entries()) {
          if (i < done) continue;
          await rest.createMessage(channel, piece);
          await ctx.state.set('dc:more', String(i + 1));
        }
        await ctx.state.set('dc:fin', '1');
        return { delivered: true };
      }
      const last = Number((await ctx.state.get('dc:ord')) ?? 1);
      const bucket = (n: number) => Math.floor((n - 1) / DISCORD_EDIT_EVERY);
      if (text && bucket(ctx.chunkOrdinal) > bucket(Math.max(1, last))) {
        await rest.editMessage(channel, card, text.slice(0, DISCORD_MAX_CONTENT));
        await ctx.state.set('dc:ord', String(ctx.chunkOrdinal));
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: err instanceof Error ? err.message : String(err) };
    }
  }
}
