import { timingSafeEqual } from 'node:crypto';
import type { TelegramConfig } from './config.js';

export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/** Constant-time check of the webhook's secret-token header. */
export function verifyTelegramSecret(config: TelegramConfig, header: string | undefined): boolean {
  if (!header) return false;
  const a = Buffer.from(header, 'utf8');
  const b = Buffer.from(config.webhook_secret, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
