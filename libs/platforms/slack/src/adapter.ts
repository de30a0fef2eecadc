import { ErrorCode, LogLevel, WebClient, type ChatPostMessageResponse } from '@slack/web-api';
import { plainText, type ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { SlackConfigSchema, type SlackConfig } from './config.js';
import { SLACK } from './name.js';

/** Slack truncates a message's `text` past 40,000 characters; cut it ourselves and say so. */
const MAX_TEXT = 40_000;
export const truncateSlackText = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 20)}\n\n… (truncated)` : text);

/** The Web API error a failed call carries (`code` from @slack/web-api's ErrorCode, `data.error` from Slack). */
export function describeSlackError(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const code = 'code' in err ? String(err.code) : 'error';
  const data = 'data' in err && typeof err.data === 'object' && err.data !== null && 'error' in err.data ? ` ${String(err.data.error)}` : '';
  return `${code}${data}`;
}

/** Slack answered the call with `ok: false` (a refusal such as `channel_not_found`), as opposed to a transport failure. */
export function isSlackPlatformError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === ErrorCode.PlatformError;
}

/** A Web API client for one token against the bot's `api_base_url`; errors only in its own log, never the token. */
export function slackWebClient(
  token: string,
  config: SlackConfig,
  opts: { fetchImpl?: typeof fetch | undefined; retries?: number; rejectRateLimited?: boolean } = {},
): WebClient {
  return new WebClient(token, {
    slackApiUrl: config.api_base_url,
    timeout: 15_000,
    // Bounded: the delivery layer reports a part that still fails, rather than the client retrying for half an hour.
    retryConfig: { retries: opts.retries ?? 3, factor: 2, minTimeout: 1_000, maxTimeout: 30_000 },
    logLevel: LogLevel.ERROR,
    rejectRateLimitedCalls: opts.rejectRateLimited ?? false,
    ...(opts.fetchImpl ? { fetch: opts.fetchImpl } : {}),
  });
}

/**
 * Slack outbound through the Web API (`@slack/web-api`, which retries 429 with Retry-After and
 * network errors). A whole reply is one `chat.postMessage`. With `enable-stream-reply`, the first
 * streamed text is posted and each later snapshot (the delivery layer coalesces them) `chat.update`s
 * that message; its channel and ts are kept with the reply in Redis, so a part resumed by another
 * replica updates the same message.
 */
export class SlackAdapter implements PlatformAdapter {
  readonly name = SLACK;

  constructor(
    private readonly configs: BotConfigs,
    private readonly fetchImpl?: typeof fetch,
  ) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = SlackConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `slack bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    const client = slackWebClient(parsed.data.bot_token, parsed.data, { fetchImpl: this.fetchImpl });
    const text = truncateSlackText(plainText(reply.message));
    const streaming = reply.stream && parsed.data['enable-stream-reply'];
    try {
      // Stream off: only the final part of a streamed reply shows.
      if (!text || (reply.stream && !reply.isFinal && !streaming)) return { delivered: true };
      const ts = await ctx.state.get('slack:ts');
      const channel = await ctx.state.get('slack:ch');
      if (ts && channel) {
        await client.chat.update({ channel, ts, text });
        return { delivered: true };
      }
      const posted: ChatPostMessageResponse = await client.chat.postMessage({ channel: route.sessionId, text });
      if (streaming && posted.ts && posted.channel) {
        await ctx.state.set('slack:ch', posted.channel);
        await ctx.state.set('slack:ts', posted.ts);
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `slack: ${describeSlackError(err)}` };
    }
  }
}
