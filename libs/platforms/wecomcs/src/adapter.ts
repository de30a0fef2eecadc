import { plainText, type ReplyRoute } from '@conveyor/contracts';
import { SharedAccessTokens, type BotConfigs, type DeliveryContext, type OutboundReply, type PlatformAdapter, type SendResult } from '@conveyor/platform-kit';
import type { RedisClient } from '@conveyor/redis-scripts';
import { ApiAnswer, callWechatApi, isTokenRejected, splitUtf8, wecomGetToken } from '@conveyor/wecom';
import { WecomCsConfigSchema, type WecomCsConfig } from './config.js';
import { openKfIdOf } from './parse.js';
import { WECOM_CS } from './name.js';
import { tokenApp } from './tokens.js';

/** `kf/send_msg` takes a text of at most 2,048 bytes. */
const TEXT_BYTES = 2048;
/**
 * WeCom lets an account send a customer at most 5 messages per message of theirs (within 48 hours):
 * a reply is cut to that many, the last saying so.
 */
const MAX_PARTS = 5;

export interface WecomCsAdapterDeps {
  redis: RedisClient;
  prefix: string;
  configs: BotConfigs;
  fetchImpl?: typeof fetch;
}

/**
 * WeCom customer-service outbound, whole replies only: a reply goes to the customer through the
 * account they wrote to (`kf/send_msg`), in text messages of at most 2,048 bytes. How many of a
 * part's messages went out is kept with the reply, so a part sent again after a crash goes on where
 * it stopped. The access token is shared by all replicas (see `SharedAccessTokens`).
 */
export class WecomCsAdapter implements PlatformAdapter {
  readonly name = WECOM_CS;
  readonly tokens: SharedAccessTokens;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly deps: WecomCsAdapterDeps) {
    this.tokens = new SharedAccessTokens(deps.redis, deps.prefix, WECOM_CS);
    this.fetchImpl = deps.fetchImpl ?? fetch;
  }

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = WecomCsConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `wecomcs bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    if (reply.stream && !reply.isFinal) return { delivered: true };
    const openKfId = openKfIdOf(route.replyTo);
    if (openKfId === undefined) return { delivered: false, reason: `wecomcs: the route names no account (replyTo ${JSON.stringify(route.replyTo.slice(0, 50))})` };
    const parts = splitUtf8(plainText(reply.message), TEXT_BYTES, MAX_PARTS);
    try {
      const sent = Number((await ctx.state.get('wecomcs:sent')) ?? '0');
      for (let i = sent; i < parts.length; i++) {
        await this.send(parsed.data, { touser: route.sessionId, open_kfid: openKfId, msgtype: 'text', text: { content: parts[i] } }, ctx.signal);
        await ctx.state.set('wecomcs:sent', String(i + 1));
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `wecomcs: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  private send(config: WecomCsConfig, body: object, signal?: AbortSignal): Promise<unknown> {
    const call = (token: string) => callWechatApi(this.fetchImpl, config.api_base_url, `/kf/send_msg?access_token=${encodeURIComponent(token)}`, { method: 'POST', body: JSON.stringify(body) }, ApiAnswer, signal);
    return this.tokens.withToken(tokenApp(config), () => wecomGetToken(this.fetchImpl, config.api_base_url, config.corpid, config.secret, signal), call, isTokenRejected, signal);
  }
}
