import { z } from 'zod';

/**
 * Bot settings of a `matrix` bot, with LangBot's keys: `homeserver_url` (the client-server API's
 * base), `user_id` (the bot's full MXID, `@bot:example.org`) and `access_token` (from a login on the
 * client API), plus `enable-stream-reply` (replies stream into one message edited with `m.replace`).
 * LangBot's bridge settings (`bridges`, `bridge_*`) drive bridge bots' logins, which Conveyor does
 * not do; they are accepted and ignored so a LangBot config imports as it is.
 */
export const MatrixConfigSchema = z.object({
  homeserver_url: z.url({ protocol: /^https?$/, error: 'homeserver_url: an http(s) URL' }).default('http://localhost:8008').transform((u) => u.replace(/\/+$/, '')),
  user_id: z.string({ error: 'user_id: the bot\'s Matrix user id is required' }).regex(/^@[^:\s]{1,255}:[^\s]{1,255}$/, 'user_id: a full Matrix user id, e.g. @bot:example.org'),
  access_token: z.string({ error: 'access_token: the access token is required' }).min(1, 'access_token: the access token is required').max(2_000).meta({ secret: true }),
  'enable-stream-reply': z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).default(false),
});
export type MatrixConfig = z.output<typeof MatrixConfigSchema>;

export function parseMatrixConfig(raw: unknown): MatrixConfig {
  return MatrixConfigSchema.parse(raw ?? {});
}
