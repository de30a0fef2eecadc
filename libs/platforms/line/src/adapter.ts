import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { HTTPFetchError, messagingApi } from '@line/bot-sdk';
import { plainText, type ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { LineConfigSchema } from './config.js';
import { LINE } from './name.js';

/** LINE refuses a text message over 5,000 characters. */
const MAX_TEXT = 5_000;
const truncate = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 20)}\n\n… (truncated)` : text);
const MAX_ATTEMPTS = 3;

let sdk: typeof import('@line/bot-sdk') | undefined;

/**
 * The SDK, loaded with the first LINE bot's first reply: a third of a second of CPU to load, and
 * every ingress, dispatcher and gateway carries this package whether or not it serves a LINE bot.
 */
async function lineSdk(): Promise<typeof import('@line/bot-sdk')> {
  sdk ??= await import('@line/bot-sdk');
  return sdk;
}

/** An HTTP error answer of the Messaging API (only a loaded SDK throws one). */
const isFetchError = (err: unknown): err is HTTPFetchError => sdk !== undefined && err instanceof sdk.HTTPFetchError;

/** 429, 5xx and network errors may pass; a 4xx will not. */
const retryable = (err: unknown) => !isFetchError(err) || err.status === 429 || err.status >= 500;

async function withRetry<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!retryable(err) || attempt >= MAX_ATTEMPTS || signal?.aborted) throw err;
      await delay(1_000 * 2 ** (attempt - 1), undefined, signal ? { signal } : undefined);
    }
  }
}

/**
 * The push's `X-Line-Retry-Key`: a UUID derived from the part's identity, so a push repeated after a
 * timeout or a dispatcher crash is accepted once by LINE (it answers 409 to the repeat).
 */
export function pushRetryKey(queryId: string, partKey: string): string {
  const h = createHash('sha256').update(`${queryId}\u0000${partKey}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const describe = (err: unknown) => (isFetchError(err) ? `HTTP ${err.status} ${err.body.slice(0, 200)}` : err instanceof Error ? err.message : String(err));

/**
 * LINE outbound through the Messaging API (`@line/bot-sdk`), whole replies only (LINE cannot edit a
 * message): a streamed reply shows when its final part arrives. The first part goes out with the
 * event's reply token (free of charge, valid about a minute, once); when the token is refused (used,
 * expired, or the event had none) and for every later part, a push to the chat, with a retry key.
 */
export class LineAdapter implements PlatformAdapter {
  readonly name = LINE;

  constructor(private readonly configs: BotConfigs) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = LineConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `line bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    if (reply.stream && !reply.isFinal) return { delivered: true };
    const text = truncate(plainText(reply.message));
    if (!text) return { delivered: true };
    const messages: messagingApi.Message[] = [{ type: 'text', text }];
    try {
      const { messagingApi: api } = await lineSdk();
      const client = new api.MessagingApiClient({ channelAccessToken: parsed.data.channel_access_token, baseURL: parsed.data.api_base_url });
      if ((await ctx.state.get('line:token-used')) !== '1') {
        await ctx.state.set('line:token-used', '1');
        try {
          await withRetry(() => client.replyMessage({ replyToken: route.replyTo, messages }), ctx.signal);
          return { delivered: true };
        } catch (err) {
          // A 400 is LINE refusing the token (used, expired, or no token at all): the push below still reaches the chat.
          if (!(isFetchError(err) && err.status === 400)) throw err;
        }
      }
      try {
        await withRetry(() => client.pushMessage({ to: route.sessionId, messages }, pushRetryKey(ctx.queryId, ctx.partKey)), ctx.signal);
      } catch (err) {
        // 409: a push with this retry key was already accepted.
        if (!(isFetchError(err) && err.status === 409)) throw err;
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `line: ${describe(err)}` };
    }
  }
}
