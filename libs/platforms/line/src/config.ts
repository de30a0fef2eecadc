import { z } from 'zod';

/** Bot settings of a `line` bot: LangBot's line adapter keys, plus the API base URL tests point at a fake. */
export const LineConfigSchema = z.object({
  /** The channel access token (long-lived), for the Messaging API. */
  channel_access_token: z.string().min(1).meta({ secret: true }),
  /** The channel secret: every webhook request is signed with it. */
  channel_secret: z.string().min(1).meta({ secret: true }),
  /** LangBot shows the webhook URL to paste into the LINE console; here it is `/bots/{bot_id}`. */
  webhook_url: z.string().default(''),
  api_base_url: z.string().url().default('https://api.line.me'),
});
export type LineConfig = z.output<typeof LineConfigSchema>;
