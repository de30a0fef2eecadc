import { redisKeys, type MessageComponent, type ReplyRoute } from '@conveyor/contracts';
import { chainToMessageText, SharedAccessTokens, splitMessageText, type DeliveryContext, type OutboundDeps, type OutboundReply, type PlatformAdapter, type SendResult } from '@conveyor/platform-kit';
import { QqApi, QqApiError, QQ_DEDUPLICATED } from './api.js';
import { parseQqOfficialConfig, type QqOfficialConfig } from './config.js';
import { targetOf, type QqTarget } from './parse.js';

/** A text reply is split into messages of at most this many characters. */
export const QQ_MAX_CONTENT = 2_000;
/** Replies to one message are numbered for as long as QQ accepts passive replies to it, and a while more. */
const MSG_SEQ_TTL_S = 2 * 60 * 60;

/**
 * A reply chain as QQ text: group and private chats show plain text only (QQ refuses links, and an
 * At by openid shows nothing), guild channels and DMs take `<@id>` mentions. Pictures and files are
 * left out: they would have to be uploaded as media first.
 */
export function chainToQqText(chain: readonly MessageComponent[], kind: QqTarget['kind']): string {
  const guild = kind === 'channel' || kind === 'dm';
  const text = chain.filter((c) => c.type === 'Plain' || c.type === 'At' || c.type === 'AtAll' || c.type === 'Unknown');
  return chainToMessageText(text, { at: (id) => (guild ? `<@${id}>` : ''), atAll: guild ? '@everyone' : '' }).replace(/^\s+/, '');
}

/**
 * QQ Official outbound, the same for webhook and WebSocket bots: a reply needs no connection, only
 * the access token (shared in Redis by every replica). Each reply is a passive reply to the user's
 * message (`msg_id`) with a `msg_seq` numbered per message in Redis, so replies from any dispatcher
 * never repeat one; the number a piece got is kept with the reply, so a piece sent again after a
 * crash carries the same number and QQ drops the copy (answered as deduplicated, taken as sent).
 * QQ cannot edit a message, so a streamed reply goes out once, whole, with its final part.
 */
export class QqOfficialAdapter implements PlatformAdapter {
  readonly name = 'qqofficial' as const;
  private readonly tokens: SharedAccessTokens;

  constructor(private readonly deps: OutboundDeps) {
    this.tokens = new SharedAccessTokens(deps.redis, deps.prefix, 'qqofficial');
  }

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    if (reply.stream && !reply.isFinal) return { delivered: true };
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    let config: QqOfficialConfig;
    try {
      config = parseQqOfficialConfig(bot.adapterConfig);
    } catch (err) {
      return { delivered: false, reason: `invalid qqofficial settings of bot ${route.botId}: ${err instanceof Error ? err.message : String(err)}` };
    }
    const target = targetOf(route.sessionId);
    if (!target) return { delivered: false, reason: `session ${route.sessionId.slice(0, 80)} names no QQ chat` };
    const text = chainToQqText(reply.message, target.kind);
    if (!text.trim()) return { delivered: true };
    const api = new QqApi({ config, tokens: this.tokens, ...(this.deps.fetchImpl ? { fetchImpl: this.deps.fetchImpl } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    const seqKey = redisKeys(this.deps.prefix).qqMsgSeq(route.botId, route.replyTo);
    try {
      for (const [i, piece] of splitMessageText(text, QQ_MAX_CONTENT).entries()) {
        const name = `qq:seq:${ctx.partKey}:${i}`;
        let seq = Number((await ctx.state.get(name)) ?? 0);
        if (!seq) {
          seq = await this.deps.redis.incr(seqKey);
          await this.deps.redis.expire(seqKey, MSG_SEQ_TTL_S);
          await ctx.state.set(name, String(seq));
        }
        await api.reply(target, piece, route.replyTo, seq).catch((err: unknown) => {
          if (err instanceof QqApiError && err.qqCode === QQ_DEDUPLICATED) return undefined;
          throw err;
        });
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: err instanceof Error ? err.message : String(err) };
    }
  }
}
