import { z } from 'zod';

/** Open API hosts LangBot's lark adapter offers; `custom` takes `custom_domain`. */
export const LARK_DOMAINS = ['https://open.feishu.cn', 'https://open.larksuite.com', 'custom'] as const;

/** Bot settings of a `lark` bot: LangBot's lark adapter keys, plus the verification token Lark's console shows. */
export const LarkConfigSchema = z.object({
  app_id: z.string().min(1),
  app_secret: z.string().min(1).meta({ secret: true }),
  /** The bot's name as Lark shows it in a mention; a mention by this name is a mention of the bot. */
  bot_name: z.string().default(''),
  /**
   * On: events arrive at the ingress, `POST /bots/{bot_id}`. Off (LangBot's default): over Lark's long
   * connection, which the gateway holds.
   */
  'enable-webhook': z.boolean().default(false),
  /** LangBot shows the webhook URL to paste into Lark's event subscription; here it is `/bots/{bot_id}`. */
  webhook_url: z.string().default(''),
  /** With it set, Lark encrypts every event and signs every request with it. */
  'encrypt-key': z.string().default('').meta({ secret: true }),
  /** The event subscription's Verification Token; with it set, an event carrying another token is refused. */
  'verification-token': z.string().default('').meta({ secret: true }),
  domain: z.enum(LARK_DOMAINS).default('https://open.feishu.cn'),
  /** The Open API base when `domain` is `custom` (a proxy, or a fake in tests). */
  custom_domain: z.string().default(''),
  /** Stream a reply into an interactive card, updated (`im.message.patch`) as it grows. */
  'enable-stream-reply': z.boolean().default(false),
}).superRefine((c, ctx) => {
  if (c.domain === 'custom' && !z.url().safeParse(c.custom_domain).success) {
    ctx.addIssue({ code: 'custom', path: ['custom_domain'], message: 'a URL is required when domain is custom' });
  }
});
export type LarkConfig = z.output<typeof LarkConfigSchema>;

/** The Open API base URL, without a trailing slash. */
export function larkApiBase(config: LarkConfig): string {
  return (config.domain === 'custom' ? config.custom_domain : config.domain).replace(/\/+$/, '');
}
