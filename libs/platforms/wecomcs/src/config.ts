import { z } from 'zod';

/** Bot settings of a `wecomcs` bot: LangBot's wecomcs adapter keys (微信客服, WeCom customer service). */
export const WecomCsConfigSchema = z.object({
  /** The corp id: asks for access tokens, and is the receiver id every callback is encrypted for. */
  corpid: z.string().min(1).max(100).meta({ title: 'Corp ID', description: 'The corp id (企业ID) of the WeCom corp the customer-service accounts belong to' }),
  /** The customer-service secret (微信客服 → API → Secret), exchanged with the corp id for an access token. */
  secret: z.string().min(1).meta({ secret: true, title: 'Secret', description: 'The WeChat customer service secret, exchanged for the access token of sync_msg and send_msg' }),
  /** The callback token: every callback is signed with it. */
  token: z.string().min(1).meta({ secret: true, title: 'Token', description: 'The callback Token; every callback is signed with it' }),
  /** The callback's 43-character key; base64 of it (with `=` appended) is the 32-byte AES key. */
  EncodingAESKey: z.string().regex(/^[A-Za-z0-9+/]{43}$/, 'EncodingAESKey must be the 43 characters WeCom shows').meta({ secret: true, title: 'EncodingAESKey', description: 'The callback\'s message encryption key (43 characters)' }),
  /** The API base (a reverse proxy in a closed network, or a fake in tests), without a trailing slash. */
  api_base_url: z.string().url().default('https://qyapi.weixin.qq.com/cgi-bin').meta({ title: 'API base URL', description: 'The WeCom API base; change it only for a reverse proxy' }),
});
export type WecomCsConfig = z.output<typeof WecomCsConfigSchema>;
