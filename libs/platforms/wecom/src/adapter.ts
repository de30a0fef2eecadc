import { createHash } from 'node:crypto';
import { plainText, type ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { WecomConfigSchema, type WecomConfig } from './config.js';
import { ApiAnswer, callWechatApi, isTokenRejected, wecomGetToken } from './api.js';
import { agentIdOf } from './parse.js';
import { WECOM } from './name.js';

/** WeCom refuses a text message's `content` over 2,048 bytes (UTF-8). */
export const WECOM_TEXT_BYTES = 2048;
/** Parts of one reply, at most: a reply longer than this many messages is cut, and says so. */
const MAX_PARTS = 20;
const TRUNCATED = '\n\n… (truncated)';
/** The access token is renewed this long before WeCom's `expires_in` says it ends. */
const TOKEN_MARGIN_MS = 5 * 60_000;
/** Access tokens of this many apps are kept per replica; the oldest goes first. */
const MAX_CACHED_TOKENS = 1_000;

/** How many UTF-16 units of `text`'s start fit in `maxBytes` UTF-8 bytes without cutting a character. */
function fittingLength(text: string, maxBytes: number): number {
  let end = 0;
  let bytes = 0;
  for (const ch of text) {
    bytes += Buffer.byteLength(ch, 'utf8');
    if (bytes > maxBytes) break;
    end += ch.length;
  }
  return end;
}

/**
 * `text` cut into pieces of at most `maxBytes` UTF-8 bytes, never inside a character, preferring to
 * end a piece after a line break in its second half; at most `maxParts` pieces (the last says it was cut).
 */
export function splitUtf8(text: string, maxBytes = WECOM_TEXT_BYTES, maxParts = MAX_PARTS): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest && parts.length < maxParts) {
    // At least one character, so a limit below one character's size cannot stall the loop.
    let end = Math.max(fittingLength(rest, maxBytes), (rest.codePointAt(0) ?? 0) > 0xffff ? 2 : 1);
    if (end < rest.length) {
      const newline = rest.lastIndexOf('\n', end - 1);
      if (newline >= end / 2) end = newline + 1;
    }
    parts.push(rest.slice(0, end));
    rest = rest.slice(end);
  }
  if (rest) {
    const last = parts.pop() ?? '';
    parts.push(`${last.slice(0, fittingLength(last, maxBytes - Buffer.byteLength(TRUNCATED, 'utf8')))}${TRUNCATED}`);
  }
  return parts;
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

/**
 * WeCom outbound through the app API, whole replies only (an app message cannot be edited): a
 * streamed reply shows when its final part arrives. A reply goes to the member through the agent
 * (app) the message came to, as `message/send` text messages of at most 2,048 bytes each. How many
 * of a part's messages went out is kept with the reply, so a part sent again after a crash goes on
 * where it stopped. Access tokens (`gettoken`) are cached per app until shortly before they expire
 * and fetched again when WeCom says one is invalid or expired.
 */
export class WecomAdapter implements PlatformAdapter {
  readonly name = WECOM;
  /** Insertion-ordered, so the first key is the oldest when the cache is full. */
  private readonly tokens = new Map<string, CachedToken>();
  private readonly pending = new Map<string, Promise<string>>();

  constructor(
    private readonly configs: BotConfigs,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = WecomConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `wecom bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    if (reply.stream && !reply.isFinal) return { delivered: true };
    const agentId = agentIdOf(route.replyTo);
    if (agentId === undefined) return { delivered: false, reason: `wecom: the route names no agent (replyTo ${JSON.stringify(route.replyTo.slice(0, 50))})` };
    const parts = splitUtf8(plainText(reply.message));
    try {
      const sent = Number((await ctx.state.get('wecom:sent')) ?? '0');
      for (let i = sent; i < parts.length; i++) {
        await this.send(parsed.data, { touser: route.sessionId, msgtype: 'text', agentid: agentId, text: { content: parts[i] } }, ctx.signal);
        await ctx.state.set('wecom:sent', String(i + 1));
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `wecom: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  /** `message/send`, with a fresh token once if WeCom says the cached one is no longer valid. */
  private async send(config: WecomConfig, body: object, signal?: AbortSignal): Promise<void> {
    for (let fresh = false; ; fresh = true) {
      const token = await this.accessToken(config, signal);
      try {
        await callWechatApi(this.fetchImpl, config.api_base_url, `/message/send?access_token=${encodeURIComponent(token)}`, { method: 'POST', body: JSON.stringify(body) }, ApiAnswer, signal);
        return;
      } catch (err) {
        if (fresh || !isTokenRejected(err)) throw err;
        this.tokens.delete(tokenKey(config));
      }
    }
  }

  private async accessToken(config: WecomConfig, signal?: AbortSignal): Promise<string> {
    const key = tokenKey(config);
    const cached = this.tokens.get(key);
    if (cached && cached.expiresAt > this.now()) return cached.token;
    // Parts of many replies may ask at once: one gettoken for them all.
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const fetching = this.fetchToken(config, key, signal).finally(() => this.pending.delete(key));
    this.pending.set(key, fetching);
    return fetching;
  }

  private async fetchToken(config: WecomConfig, key: string, signal?: AbortSignal): Promise<string> {
    const answer = await wecomGetToken(this.fetchImpl, config.api_base_url, config.corpid, config.secret, signal);
    const lifetimeMs = answer.expiresInS * 1000;
    this.tokens.delete(key);
    if (this.tokens.size >= MAX_CACHED_TOKENS) {
      const oldest = this.tokens.keys().next();
      if (!oldest.done) this.tokens.delete(oldest.value);
    }
    this.tokens.set(key, { token: answer.token, expiresAt: this.now() + Math.max(lifetimeMs - TOKEN_MARGIN_MS, lifetimeMs / 2) });
    return answer.token;
  }
}

/** The token cache's key: the app's credentials and API base, hashed so the secret is not kept as a key. */
function tokenKey(config: WecomConfig): string {
  return createHash('sha256').update(`${config.api_base_url}\u0000${config.corpid}\u0000${config.secret}`).digest('hex');
}
