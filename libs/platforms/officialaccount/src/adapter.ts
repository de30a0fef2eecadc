import { plainText, type ReplyRoute } from '@conveyor/contracts';
import { appKey, handToHeldCall, SharedAccessTokens, type DeliveryContext, type OutboundDeps, type OutboundReply, type PlatformAdapter, type SendResult } from '@conveyor/platform-kit';
import { ApiAnswer, callWechatApi, isTokenRejected, splitUtf8, TokenAnswer, WecomApiError } from '@conveyor/wecom';
import { OfficialAccountConfigSchema, type OfficialAccountConfig } from './config.js';
import { OFFICIAL_ACCOUNT } from './name.js';

/** The longest text a passive reply or a customer-service message carries: 2,048 bytes (UTF-8). */
export const PASSIVE_TEXT_BYTES = 2048;

/**
 * WeChat Official Account outbound, whole replies only: a streamed reply shows when its final part
 * arrives. The reply goes to the ingress still holding the message's call, if it does (it becomes
 * the passive reply there); otherwise, or when it is longer than a passive reply may be, through the
 * customer-service message API (`message/custom/send`) in text messages of at most 2,048 bytes
 * (a follower can be written to so within 48 hours of their message). How many of a part's messages
 * went out is kept with the reply, so a part sent again after a crash goes on where it stopped. The
 * access token (`cgi-bin/token`) is shared by all replicas (see `SharedAccessTokens`).
 */
export class OfficialAccountAdapter implements PlatformAdapter {
  readonly name = OFFICIAL_ACCOUNT;
  private readonly tokens: SharedAccessTokens;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly deps: Pick<OutboundDeps, 'redis' | 'prefix' | 'topology' | 'nc' | 'configs' | 'logger' | 'fetchImpl'>) {
    this.tokens = new SharedAccessTokens(deps.redis, deps.prefix, OFFICIAL_ACCOUNT);
    this.fetchImpl = deps.fetchImpl ?? fetch;
  }

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = OfficialAccountConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `officialaccount bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    if (reply.stream && !reply.isFinal) return { delivered: true };
    const text = plainText(reply.message);
    const passive = text.trim() !== '' && Buffer.byteLength(text, 'utf8') <= PASSIVE_TEXT_BYTES;
    // A reply too long to be passive still lets the held call go at once (an empty part), so the
    // follower is not kept waiting for the window to end.
    const handed = await handToHeldCall(this.deps, { botId: route.botId, sessionId: route.replyTo, message: passive ? [{ type: 'Plain', text }] : [], isFinal: true, stream: false, sequence: ctx.sequence });
    if (handed && passive) return { delivered: true };
    const parts = splitUtf8(text, PASSIVE_TEXT_BYTES);
    try {
      const sent = Number((await ctx.state.get('officialaccount:sent')) ?? '0');
      for (let i = sent; i < parts.length; i++) {
        await this.send(parsed.data, { touser: route.sessionId, msgtype: 'text', text: { content: parts[i] } }, ctx.signal);
        await ctx.state.set('officialaccount:sent', String(i + 1));
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `officialaccount: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  /** `message/custom/send`, with a fresh token once if WeChat says the kept one is no longer valid. */
  private send(config: OfficialAccountConfig, body: object, signal?: AbortSignal): Promise<unknown> {
    const app = appKey(config.api_base_url, config.AppID, config.AppSecret);
    const call = (token: string) => callWechatApi(this.fetchImpl, config.api_base_url, `/message/custom/send?access_token=${encodeURIComponent(token)}`, { method: 'POST', body: JSON.stringify(body) }, ApiAnswer, signal);
    return this.tokens.withToken(app, () => this.fetchToken(config, signal), call, isTokenRejected, signal);
  }

  private async fetchToken(config: OfficialAccountConfig, signal?: AbortSignal): Promise<{ token: string; expiresInS: number }> {
    const query = new URLSearchParams({ grant_type: 'client_credential', appid: config.AppID, secret: config.AppSecret });
    const answer = await callWechatApi(this.fetchImpl, config.api_base_url, `/token?${query.toString()}`, { method: 'GET' }, TokenAnswer, signal);
    if (!answer.access_token) throw new WecomApiError('/token answered without access_token', undefined, false);
    return { token: answer.access_token, expiresInS: answer.expires_in ?? 7200 };
  }
}
