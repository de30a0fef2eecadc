import { z } from 'zod';

/**
 * Bot settings of a `kook` bot: LangBot's key `token` (the bot token of the WebSocket connection
 * mode) plus `api_base_url` (the REST base; the gateway URL is read from `/gateway/index` on it, so a
 * test or a proxy can stand in for KOOK).
 */
export const KookConfigSchema = z.object({
  token: z.string({ error: 'token: the bot token is required' }).min(1, 'token: the bot token is required').max(1_000).meta({ secret: true }),
  api_base_url: z.url({ protocol: /^https?$/, error: 'api_base_url: an http(s) URL' }).default('https://www.kookapp.cn/api/v3').transform((u) => u.replace(/\/+$/, '')),
});
export type KookConfig = z.output<typeof KookConfigSchema>;

export function parseKookConfig(raw: unknown): KookConfig {
  return KookConfigSchema.parse(raw ?? {});
}
