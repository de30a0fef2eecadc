import { z } from 'zod';

/** Where WeCom holds AI bots' long connections. */
export const WECOM_BOT_WS_URL = 'wss://openws.work.weixin.qq.com';

/**
 * Bot settings of a `wecombot` bot: LangBot's wecombot adapter keys (企业微信智能机器人). Two modes,
 * as LangBot has them: the long connection (LangBot's default: the gateway holds a WebSocket to
 * WeCom, authenticated by BotId and Secret) and webhook mode (encrypted callbacks to the ingress,
 * signed with Token and EncodingAESKey).
 */
export const WecomBotConfigSchema = z.object({
  /**
   * On: callbacks arrive at the ingress. Off: the long connection. Unset: webhook mode when Token
   * and EncodingAESKey are set (how every bot was reached before the long connection existed),
   * the long connection otherwise.
   */
  'enable-webhook': z.boolean().optional().meta({ title: 'enable-webhook', description: 'Webhook mode (callbacks to the ingress) instead of the long connection' }),
  /** The bot's id (aibotid): the long connection authenticates with it; a callback for another bot is refused when it is set. */
  BotId: z.string().max(200).default('').meta({ title: 'BotId', description: 'The AI bot\'s id (aibotid); the long connection signs in with it' }),
  /** The long connection's secret, shown with the BotId in WeCom's console. */
  Secret: z.string().max(500).default('').meta({ secret: true, title: 'Secret', description: 'The AI bot\'s long-connection secret' }),
  /** The bot's name as a mention shows it: `@<robot_name>` is taken out of the text. */
  robot_name: z.string().max(200).default('').meta({ title: 'robot_name', description: 'The bot\'s name as group members mention it' }),
  /** Webhook mode: the callback Token; every callback is signed with it. */
  Token: z.string().max(500).default('').meta({ secret: true, title: 'Token', description: 'Webhook mode: the AI bot\'s callback Token; every callback is signed with it' }),
  /** Webhook mode: the callback's 43-character key; base64 of it (with `=` appended) is the 32-byte AES key. */
  EncodingAESKey: z.string().regex(/^([A-Za-z0-9+/]{43})?$/, 'EncodingAESKey must be the 43 characters WeCom shows').default('').meta({ secret: true, title: 'EncodingAESKey', description: 'Webhook mode: the AI bot\'s callback encryption key (43 characters)' }),
  /**
   * The corp id. An AI bot's callbacks are encrypted for an empty receiver id; one encrypted for
   * this corp id is taken too (LangBot's configs carry it).
   */
  Corpid: z.string().max(100).default('').meta({ title: 'Corpid', description: 'The corp id (企业ID)' }),
  /** The long connection: stream a reply into WeCom's stream message as it grows; off, it goes whole once finished. */
  'enable-stream-reply': z.boolean().default(true).meta({ title: 'enable-stream-reply', description: 'Long connection: stream replies as they grow' }),
  /** Not a LangBot setting (its client's fixed address): the long connection's URL, for a proxy. */
  ws_url: z.string().regex(/^wss?:\/\//, 'ws_url must start with ws:// or wss://').default(WECOM_BOT_WS_URL).meta({ title: 'ws_url', description: 'The long connection\'s WebSocket URL (WeCom\'s by default)' }),
}).superRefine((c, ctx) => {
  if (usesWebhook(c)) {
    if (!c.Token) ctx.addIssue({ code: 'custom', path: ['Token'], message: 'webhook mode needs the callback Token' });
    if (!c.EncodingAESKey) ctx.addIssue({ code: 'custom', path: ['EncodingAESKey'], message: 'webhook mode needs the EncodingAESKey' });
  } else {
    if (!c.BotId) ctx.addIssue({ code: 'custom', path: ['BotId'], message: 'the long connection needs the BotId' });
    if (!c.Secret) ctx.addIssue({ code: 'custom', path: ['Secret'], message: 'the long connection needs the Secret' });
  }
});
export type WecomBotConfig = z.output<typeof WecomBotConfigSchema>;

/** Whether the bot is reached by callbacks to the ingress (webhook mode) rather than the long connection. */
export function usesWebhook(c: Pick<WecomBotConfig, 'enable-webhook' | 'Token' | 'EncodingAESKey'>): boolean {
  return c['enable-webhook'] ?? (c.Token !== '' && c.EncodingAESKey !== '');
}
