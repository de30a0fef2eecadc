import { z } from 'zod';

/**
 * Bot settings of a `satori` bot: the Satori server's `endpoint` (its HTTP base; the WebSocket is
 * `/v1/events` below it, the API `/v1/<method>`) and its `token`, plus `platform` and `self_id` when
 * the server holds several logins (default: the first login READY names).
 */
export const SatoriConfigSchema = z.object({
  endpoint: z.url({ protocol: /^https?$/, error: 'endpoint: the Satori server\'s http(s) URL' }).default('http://127.0.0.1:5500').transform((u) => u.replace(/\/+$/, '')),
  token: z.string().max(1_000).default('').meta({ secret: true }),
  platform: z.string().max(100).default(''),
  self_id: z.string().max(200).default(''),
});
export type SatoriConfig = z.output<typeof SatoriConfigSchema>;

export function parseSatoriConfig(raw: unknown): SatoriConfig {
  return SatoriConfigSchema.parse(raw ?? {});
}
