import { z } from 'zod';

/** LangBot's default LoadingMessage (shown when a passive-mode reply is not ready within WeChat's window). */
export const DEFAULT_LOADING_MESSAGE = 'AI正在思考中，请发送任意内容获取回复。';

/**
 * Bot settings of an `officialaccount` bot: LangBot's officialaccount adapter keys (a WeChat
 * Official Account's 服务器配置). LangBot's `host` and `port` are not settings here: the callback URL
 * is the ingress' `/bots/{bot_id}`.
 */
export const OfficialAccountConfigSchema = z.object({
  /** The server configuration's Token: every callback is signed with it. */
  token: z.string().min(1).meta({ secret: true, title: 'Token', description: 'The Token of the account\'s server configuration (服务器配置); every callback is signed with it' }),
  /** The 43-character key of safe mode (安全模式); base64 of it (with `=` appended) is the 32-byte AES key. Empty: plain mode only. */
  EncodingAESKey: z
    .string()
    .regex(/^([A-Za-z0-9+/]{43})?$/, 'EncodingAESKey must be the 43 characters WeChat shows, or empty for plain mode')
    .default('')
    .meta({ secret: true, title: 'EncodingAESKey', description: 'The message encryption key (43 characters) for safe mode; empty when the account sends plain messages' }),
  /** The developer password, exchanged with the AppID for an access token. */
  AppSecret: z.string().min(1).meta({ secret: true, title: 'AppSecret', description: 'The developer password (开发者密码), exchanged for the access token of the customer-service message API' }),
  /** The developer id: asks for access tokens, and is the receiver id every encrypted callback is for. */
  AppID: z.string().regex(/^[\w-]{1,64}$/, 'AppID is the developer id WeChat shows (wx…)').meta({ title: 'AppID', description: 'The developer id (开发者ID, wx…)' }),
  /**
   * `drop`: a reply ready within WeChat's 5-second window is the callback's passive reply, a later
   * one goes out through the customer-service message API and the callback is answered `success`.
   * `passive`: the same, but a late reply's callback is answered with LoadingMessage.
   */
  Mode: z.enum(['drop', 'passive']).default('drop').meta({ title: 'Mode', description: 'drop: a reply not ready within 5 s is sent later through the customer-service API; passive: the same, with LoadingMessage shown at once' }),
  /** The passive-mode answer to a message whose reply is not ready in time. */
  LoadingMessage: z.string().max(600).default(DEFAULT_LOADING_MESSAGE).meta({ title: 'LoadingMessage', description: 'Passive mode: what the user sees at once when the reply takes longer than 5 s' }),
  /** The API base (a reverse proxy, or a fake in tests), without a trailing slash. */
  api_base_url: z.string().url().default('https://api.weixin.qq.com/cgi-bin').meta({ title: 'API base URL', description: 'The WeChat API base; change it only for a reverse proxy' }),
});
export type OfficialAccountConfig = z.output<typeof OfficialAccountConfigSchema>;
