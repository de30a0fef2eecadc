import { inboundQuery, headerOf, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { TelegramAdapter } from './adapter.js';
import { TelegramConfigSchema, type TelegramConfig } from './config.js';
import { checkTelegramInbound, parseTelegramUpdate } from './parse.js';
import { TELEGRAM_SECRET_HEADER, verifyTelegramSecret } from './verify.js';

export const TELEGRAM = 'telegram';

const ok = { status: 200, body: { ok: true } };

/**
 * Telegram Bot API webhook (register it with setWebhook and the bot's `webhook_secret` as
 * secret_token). The secret-token header is checked in constant time; a repeated update (Telegram
 * retries until it gets a 2xx) is dropped by its update_id in JetStream's window. For the same reason
 * an update that can never become a query is answered 200 and dropped with a warning: any other
 * answer would bring it back again and again.
 */
export const telegramInbound: PlatformInbound<TelegramConfig> = {
  handle(req, config): WebhookOutcome {
    if (!verifyTelegramSecret(config, headerOf(req.headers, TELEGRAM_SECRET_HEADER))) {
      return { kind: 'answer', answer: { status: 401, body: { ok: false, description: 'invalid secret token' } } };
    }
    let body: unknown;
    try {
      body = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return { kind: 'drop', reason: 'the body is not valid JSON' };
    }
    // The pipeline's at-bot rule compares At targets with the adapter's account id; for Telegram that is the bot id.
    const parsed = parseTelegramUpdate(body, config, req.botId);
    if (!parsed.ok) return { kind: 'drop', reason: `not an update: ${parsed.error}` };
    // Edits, joins, channel posts: acknowledged, nothing to answer.
    if (!parsed.inbound) return { kind: 'publish', queries: [] };
    const ref = { updateId: parsed.inbound.updateId };
    const checked = checkTelegramInbound(parsed.inbound);
    if (!checked.ok) return { kind: 'drop', reason: checked.reason, ref };
    const m = checked.inbound;
    return {
      kind: 'publish',
      ref,
      queries: [
        inboundQuery(m, { replyTo: m.messageId, dedupId: String(m.updateId), stream: config['enable-stream-reply'] }),
      ],
    };
  },
  answers: {
    notFound: { status: 404, body: { ok: false, description: 'Bot not found' } },
    disabled: { status: 403, body: { ok: false, description: 'Bot is disabled' } },
    misconfigured: { status: 500, body: { ok: false, description: 'bot misconfigured' } },
    tooLarge: { ...ok, headers: { Connection: 'close' } },
    dropped: ok,
    accepted: ok,
    // Telegram retries a non-2xx webhook answer later.
    overloaded: { status: 503, body: { ok: false } },
    failed: { status: 500, body: { ok: false } },
  },
};

export const telegramPlatform: Platform<TelegramConfig> = {
  name: TELEGRAM,
  botConfigSchema: TelegramConfigSchema,
  configurable: true,
  // Streams only with the bot's `enable-stream-reply`, which the webhook puts on every route.
  streamsByDefault: false,
  inbound: telegramInbound,
  outbound: (deps) => new TelegramAdapter(deps.configs, deps.fetchImpl),
};
