import { z } from 'zod';

/** Bot settings of a `telegram` bot (LangBot's telegram adapter keys, plus what a webhook setup needs). */
export const TelegramConfigSchema = z.object({
  token: z.string().min(1).meta({ secret: true }),
  /** Telegram sends it in `X-Telegram-Bot-Api-Secret-Token` (setWebhook's secret_token); required. */
  webhook_secret: z.string().min(1).meta({ secret: true }),
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

