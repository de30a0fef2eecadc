import { z } from 'zod';

/** Bot settings of a `slack` bot: LangBot's slack adapter keys, plus what a test or a proxy needs. */
export const SlackConfigSchema = z.object({
  /** The app's bot token (`xoxb-...`), for the Web API. */
  bot_token: z.string().min(1).meta({ secret: true }),
  /** The app's signing secret: every Events API request is signed with it. */
  signing_secret: z.string().min(1).meta({ secret: true }),
  /**
   * An app-level token (`xapp-...`, scope `connections:write`) turns on Socket Mode: the gateway
   * holds the app's Socket Mode WebSocket and events arrive there instead of at the webhook. Empty:
   * events come to the webhook.
   */
  app_token: z.union([z.literal(''), z.string().regex(/^xapp-[\w-]{1,500}$/, 'an app-level token (xapp-...)')]).default('').meta({ secret: true }),
  /** LangBot shows the webhook URL to paste into Slack's event subscription; here it is `/bots/{bot_id}`. */
  webhook_url: z.string().default(''),
  /** Web API base URL, ending in `/`; tests point it at a fake server. */
  api_base_url: z.string().url().default('https://slack.com/api/'),
  /** Stream a reply by posting its first text and updating that message (`chat.update`) as it grows. */
  'enable-stream-reply': z.boolean().default(false),
});
export type SlackConfig = z.output<typeof SlackConfigSchema>;
