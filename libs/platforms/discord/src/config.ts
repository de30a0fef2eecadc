import { z } from 'zod';

/**
 * Bot settings of a `discord` bot: LangBot's keys (`client_id`, `token`) plus `enable-stream-reply`
 * and `api_base_url` (the REST base; the Gateway URL is read from `GET /gateway/bot` on it, so a test
 * or a proxy can stand in for Discord).
 */
export const DiscordConfigSchema = z.object({
  client_id: z.string({ error: 'client_id: the application id is required' }).min(1, 'client_id: the application id is required').max(64),
  token: z.string({ error: 'token: the bot token is required' }).min(1, 'token: the bot token is required').max(1_000).meta({ secret: true }),
  /** Replies stream into one message edited in place (throttled), the final edit carrying the whole text. */
  'enable-stream-reply': z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).default(false),
  api_base_url: z.url({ protocol: /^https?$/, error: 'api_base_url: an http(s) URL' }).default('https://discord.com/api/v10').transform((u) => u.replace(/\/+$/, '')),
});
export type DiscordConfig = z.output<typeof DiscordConfigSchema>;

export function parseDiscordConfig(raw: unknown): DiscordConfig {
  return DiscordConfigSchema.parse(raw ?? {});
}
