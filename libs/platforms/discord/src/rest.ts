import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { splitMessageText } from '@conveyor/platform-kit';

/** Discord's limit on a message's content. */
export const DISCORD_MAX_CONTENT = 2_000;
/** A 429's `retry_after` is waited out up to this long; a longer one fails the call (the caller retries later). */
const MAX_RATE_LIMIT_WAIT_MS = 10_000;
/** Attempts of one call across 429s. */
const MAX_ATTEMPTS = 4;
const REQUEST_TIMEOUT_MS = 15_000;
/** Bytes of an error body kept for the message (a proxy's HTML page must not flood the logs). */
const ERROR_BODY_CHARS = 300;

/** Discord refused a call; `status` and Discord's JSON error `code` classify it. */
export class DiscordApiError extends Error {
  readonly code = 'DISCORD_API_ERROR';

  constructor(readonly status: number, readonly discordCode: number | undefined, message: string) {
    super(message);
    this.name = 'DiscordApiError';
  }

  /** A refusal that sending again will not change (bad request, no access, unknown channel). */
  get permanent(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 429 && this.status !== 408;
  }
}

const RateLimited = z.looseObject({ retry_after: z.number().nonnegative().optional(), global: z.boolean().optional() });
const ErrorBody = z.looseObject({ code: z.number().int().optional(), message: z.string().max(10_000).optional() });
export const GatewayBot = z.looseObject({ url: z.string().regex(/^wss?:\/\//, 'url: a ws(s) URL') });
export const SentMessage = z.looseObject({ id: z.string().min(1).max(64) });
const Channel = z.looseObject({ id: z.string().min(1).max(64), name: z.string().max(1_000).nullish() });

export interface DiscordRestOptions {
  baseUrl: string;
  token: string;
  fetchImpl?: typeof fetch;
  signal?: AbortSignal;
  /** Told about every 429 waited out (for a log line). */
  onRateLimited?: (path: string, retryAfterMs: number) => void;
}

/**
 * The few REST calls Conveyor makes, with `Authorization: Bot <token>`. A 429 is waited out as its
 * `retry_after` says (bounded in time and attempts); other failures are DiscordApiErrors.
 */
export class DiscordRest {
  constructor(private readonly o: DiscordRestOptions) {}

  async call<T>(method: 'GET' | 'POST' | 'PATCH', path: string, schema: z.ZodType<T>, body?: object, onWritten?: () => void): Promise<T> {
    const fetchImpl = this.o.fetchImpl ?? fetch;
    for (let attempt = 1; ; attempt++) {
      const signals = [AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(this.o.signal ? [this.o.signal] : [])];
      const pending = fetchImpl(`${this.o.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bot ${this.o.token}`, 'content-type': 'application/json', 'user-agent': 'DiscordBot (conveyor, 0.1)' },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.any(signals),
      });
      if (attempt === 1) onWritten?.();
      const res = await pending;
      const text = await res.text();
      if (res.status === 429) {
        const parsed = RateLimited.safeParse(safeJson(text));
        const header = Number(res.headers.get('retry-after'));
        const seconds = parsed.success && parsed.data.retry_after !== undefined ? parsed.data.retry_after : Number.isFinite(header) ? header : 1;
        const waitMs = Math.ceil(seconds * 1000);
        if (waitMs > MAX_RATE_LIMIT_WAIT_MS || attempt >= MAX_ATTEMPTS) {
          throw new DiscordApiError(429, undefined, `Discord rate limit on ${method} ${routeOf(path)}: retry after ${seconds}s (not waited)`);
        }
        this.o.onRateLimited?.(routeOf(path), waitMs);
        await sleep(waitMs, undefined, { signal: this.o.signal }).catch(() => undefined);
        continue;
      }
      if (!res.ok) {
        const err = ErrorBody.safeParse(safeJson(text));
        const detail = err.success && err.data.message ? err.data.message : text.slice(0, ERROR_BODY_CHARS);
        throw new DiscordApiError(res.status, err.success ? err.data.code : undefined, `Discord ${method} ${routeOf(path)} failed with ${res.status}: ${detail}`);
      }
      const parsed = schema.safeParse(text ? safeJson(text) : null);
      if (!parsed.success) throw new DiscordApiError(res.status, undefined, `Discord ${method} ${routeOf(path)} answered an unexpected body`);
      return parsed.data;
    }
  }

  gatewayUrl(): Promise<string> {
    return this.call('GET', '/gateway/bot', GatewayBot).then((g) => g.url);
  }

  /** The DM channel with a user (Discord returns the existing one). */
  dmChannel(userId: string): Promise<string> {
    return this.call('POST', '/users/@me/channels', Channel, { recipient_id: userId }).then((c) => c.id);
  }

  /** A channel's name (a guild text channel has one; a DM has none). */
  channelName(channelId: string): Promise<string> {
    return this.call('GET', `/channels/${enc(channelId)}`, Channel).then((c) => c.name ?? '');
  }

  createMessage(channelId: string, content: string, replyTo?: string, onWritten?: () => void): Promise<string> {
    const body = {
      content,
      // A reply to a message that was deleted meanwhile still goes out, as a plain message.
      ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
      allowed_mentions: { parse: ['users'], replied_user: true },
    };
    return this.call('POST', `/channels/${enc(channelId)}/messages`, SentMessage, body, onWritten).then((m) => m.id);
  }

  editMessage(channelId: string, messageId: string, content: string): Promise<void> {
    return this.call('PATCH', `/channels/${enc(channelId)}/messages/${enc(messageId)}`, SentMessage, { content }).then(() => undefined);
  }
}

const enc = encodeURIComponent;

/** The path with ids replaced, for messages and logs (ids are not secret, but they make every line unique). */
function routeOf(path: string): string {
  return path.replace(/\/\d+/g, '/:id');
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}


/** A text as Discord messages of at most 2,000 characters (see `splitMessageText`). */
export function splitContent(text: string, max = DISCORD_MAX_CONTENT): string[] {
  return splitMessageText(text, max);
}
