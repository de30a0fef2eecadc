import { z } from 'zod';

/** Bot settings of a `wecom` bot: LangBot's wecom adapter keys (a self-built app of a WeCom corp). */
export const WecomConfigSchema = z.object({
  /** The corp id (企业ID): asks for access tokens, and is the receiver id every callback is encrypted for. */
  corpid: z.string().min(1).max(100),
  /** The app's secret, exchanged with the corp id for an access token. */
  secret: z.string().min(1).meta({ secret: true }),
  /** The callback token: every callback is signed with it. */
  token: z.string().min(1).meta({ secret: true }),
  /** The callback's 43-character key; base64 of it (with `=` appended) is the 32-byte AES key. */
  EncodingAESKey: z.string().regex(/^[A-Za-z0-9+/]{43}$/, 'EncodingAESKey must be the 43 characters WeCom shows').meta({ secret: true }),
  /** The contacts app's secret (older LangBot configs); only kept so such configs still parse. */
  contacts_secret: z.string().default('').meta({ secret: true }),
  /** LangBot shows the callback URL to paste into the app's settings; here it is `/bots/{bot_id}`. */
  webhook_url: z.string().default(''),
  /** The API base (a reverse proxy in a closed network, or a fake in tests), without a trailing slash. */
  api_base_url: z.string().url().default('https://qyapi.weixin.qq.com/cgi-bin'),
});
export type WecomConfig = z.output<typeof WecomConfigSchema>;
