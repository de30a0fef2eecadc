import { timingSafeEqual } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { LauncherType, MessageComponent } from '@conveyor/contracts';

/** Bot settings of a `telegram` bot (LangBot's telegram adapter keys, plus what a webhook setup needs). */
export const TelegramConfigSchema = z.object({
  token: z.string().min(1),
  /** Telegram sends it in `X-Telegram-Bot-Api-Secret-Token` (setWebhook's secret_token); required. */
  webhook_secret: z.string().min(1),
  /** Bot API base URL; tests point it at a fake server. */
  api_base_url: z.string().url().default('https://api.telegram.org'),
  /** The bot's @username without the @, for mentions in groups (LangBot: its account id). */
  bot_username: z.string().default(''),
  /** LangBot's per-bot flag (Telegram defaults off): stream by a placeholder and throttled edits. */
  'enable-stream-reply': z.boolean().default(false),
});
export type TelegramConfig = z.output<typeof TelegramConfigSchema>;

export function parseTelegramConfig(raw: unknown): TelegramConfig {
  return TelegramConfigSchema.parse(raw ?? {});
}

export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/** Constant-time check of the webhook's secret-token header. */
export function verifyTelegramSecret(config: TelegramConfig, header: string | undefined): boolean {
  if (!header) return false;
  const a = Buffer.from(header, 'utf8');
  const b = Buffer.from(config.webhook_secret, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

const TgUser = z.object({ id: z.number(), is_bot: z.boolean().optional(), first_name: z.string().default(''), last_name: z.string().optional(), username: z.string().optional() });
const TgChat = z.object({ id: z.number(), type: z.enum(['private', 'group', 'supergroup', 'channel']), title: z.string().optional() });
const TgMessage = z.object({
  message_id: z.number(),
  from: TgUser.optional(),
  chat: TgChat,
  date: z.number().optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  message_thread_id: z.number().optional(),
});
export const TelegramUpdateSchema = z.object({ update_id: z.number(), message: TgMessage.optional() }).loose();

export interface TelegramInbound {
  updateId: number;
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageId: string;
  messageChain: MessageComponent[];
}

/**
 * An update as LangBot's telegram adapter reads it: private chats are person sessions, groups and
 * supergroups group sessions keyed by the chat id; `@bot_username` in the text becomes an `At` of the
 * bot (so the group at-bot rule matches) and is removed from the text. Updates without a text
 * message (edits, joins, channel posts) yield null and are acknowledged without a query.
 */
export function parseTelegramUpdate(raw: unknown, config: TelegramConfig, botAccountId: string): { ok: true; inbound: TelegramInbound | null } | { ok: false; error: string } {
  const parsed = TelegramUpdateSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  const m = parsed.data.message;
  const text = m?.text ?? m?.caption;
  if (!m || text === undefined || m.chat.type === 'channel') return { ok: true, inbound: null };
  const chain: MessageComponent[] = [];
  let body = text;
  const mention = config.bot_username ? `@${config.bot_username}` : '';
  if (mention && body.includes(mention)) {
    chain.push({ type: 'At', target: botAccountId, display: '' });
    body = body.split(mention).join('');
  }
  chain.push({ type: 'Plain', text: body });
  const from = m.from;
  const senderName = from ? [from.first_name, from.last_name].filter(Boolean).join(' ') || from.username || String(from.id) : 'User';
  const sessionId = String(m.chat.id);
  const group = m.chat.type === 'group' || m.chat.type === 'supergroup';
  return {
    ok: true,
    inbound: {
      updateId: parsed.data.update_id,
      sessionId,
      launcherType: group ? 'group' : 'person',
      senderId: from ? String(from.id) : sessionId,
      senderName,
      ...(group ? { groupName: m.chat.title ?? sessionId } : {}),
      messageId: String(m.message_id),
      messageChain: chain,
    },
  };
}

export class TelegramApiError extends Error {
  constructor(
    readonly method: string,
    readonly status: number,
    readonly description: string,
    readonly retryAfterS?: number,
  ) {
    super(`telegram ${method}: ${status} ${description}`);
  }
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500 || this.status === 0;
  }
}

/** A minimal Bot API client: JSON POSTs to `{base}/bot{token}/{method}`, with LangBot-like retry on 429/5xx. */
export class TelegramApi {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly opts: { maxRetries?: number; timeoutMs?: number; signal?: AbortSignal; fetchImpl?: typeof fetch } = {},
  ) {}

  async call<T = unknown>(method: string, params: Record<string, unknown>): Promise<T> {
    const maxRetries = this.opts.maxRetries ?? 3;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(method, params);
      } catch (err) {
        const e = err instanceof TelegramApiError ? err : new TelegramApiError(method, 0, (err as Error).message);
        if (!e.retryable || attempt > maxRetries || this.opts.signal?.aborted) throw e;
        const waitMs = e.retryAfterS !== undefined ? Math.min(e.retryAfterS, 30) * 1000 : Math.min(2 ** (attempt - 1), 30) * 1000;
        await delay(waitMs, undefined, this.opts.signal ? { signal: this.opts.signal } : undefined);
      }
    }
  }

  private async once<T>(method: string, params: Record<string, unknown>): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}/bot${this.token}/${method}`;
    const signals = [AbortSignal.timeout(this.opts.timeoutMs ?? 15_000), ...(this.opts.signal ? [this.opts.signal] : [])];
    const res = await (this.opts.fetchImpl ?? fetch)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(params),
      signal: AbortSignal.any(signals),
    });
    const json = (await res.json().catch(() => ({}))) as { ok?: boolean; result?: T; description?: string; error_code?: number; parameters?: { retry_after?: number } };
    if (res.ok && json.ok) return json.result as T;
    throw new TelegramApiError(method, json.error_code ?? res.status, json.description ?? `HTTP ${res.status}`, json.parameters?.retry_after);
  }
}
