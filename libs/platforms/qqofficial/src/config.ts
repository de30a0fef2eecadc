import { z } from 'zod';

const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

/**
 * Bot settings of a `qqofficial` bot: LangBot's keys `appid`, `secret` (the AppSecret: it signs the
 * webhook and gets the access token) and `token` (the bot's old token, kept for LangBot's config;
 * the access token replaces it), plus `enable-webhook` (true: QQ calls `/bots/{id}`; false: the
 * gateway holds the bot's WebSocket), `api_base_url` and `auth_url` (so a test or a proxy can
 * stand in for QQ).
 */
export const QqOfficialConfigSchema = z.object({
  appid: z.string({ error: 'appid: the bot\'s AppID is required' }).regex(/^\d{1,20}$/, 'appid: the bot\'s AppID (digits)'),
  secret: z.string({ error: 'secret: the AppSecret is required' }).min(1, 'secret: the AppSecret is required').max(256).meta({ secret: true }),
  token: z.string().max(1_000).default('').meta({ secret: true }),
  'enable-webhook': flag.default(true),
  api_base_url: z.url({ protocol: /^https?$/, error: 'api_base_url: an http(s) URL' }).default('https://api.sgroup.qq.com').transform((u) => u.replace(/\/+$/, '')),
  auth_url: z.url({ protocol: /^https?$/, error: 'auth_url: an http(s) URL' }).default('https://bots.qq.com/app/getAppAccessToken'),
});
export type QqOfficialConfig = z.output<typeof QqOfficialConfigSchema>;

export function parseQqOfficialConfig(raw: unknown): QqOfficialConfig {
  return QqOfficialConfigSchema.parse(raw ?? {});
}
