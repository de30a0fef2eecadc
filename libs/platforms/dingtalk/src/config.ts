import { z } from 'zod';

/** LangBot's YAML booleans, which also arrive as the strings a form or `${ENV}` interpolation makes. */
const flag = (fallback: boolean) => z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).default(fallback);

/**
 * Bot settings of a `dingtalk` bot: LangBot's dingtalk adapter keys (an enterprise internal app's
 * robot), plus `mode` (how messages reach Conveyor) and `api_base_url` (the OpenAPI host, so a proxy
 * or a test can stand in for DingTalk).
 */
export const DingtalkConfigSchema = z.object({
  /** The app's Client ID (AppKey): opens Stream connections and asks for access tokens. */
  client_id: z.string({ error: 'client_id: the Client ID (AppKey) is required' }).min(1, 'client_id: the Client ID (AppKey) is required').max(200),
  /** The app's Client Secret (AppSecret); also the key HTTP callbacks are signed with. */
  client_secret: z.string({ error: 'client_secret: the Client Secret (AppSecret) is required' }).min(1, 'client_secret: the Client Secret (AppSecret) is required').max(500).meta({ secret: true }),
  /** The robot's code for the robot OpenAPI; empty means the Client ID, as for an enterprise internal robot. */
  robot_code: z.string().max(200).default(''),
  /** The robot's name as a mention shows it: `@<robot_name>` is taken out of the text. */
  robot_name: z.string().max(200).default(''),
  /** Replies go out as markdown (LangBot's default) instead of plain text. */
  markdown_card: flag(true),
  /** Replies stream into an AI card (`card_template_id`) updated as they grow. */
  'enable-stream-reply': flag(false),
  /** The AI card template streamed replies are shown in; without one, replies go out whole. */
  card_template_id: z.string().max(200).default(''),
  /** The card's wide-screen auto layout (LangBot's `card_auto_layout`). */
  card_auto_layout: flag(false),
  /**
   * `stream` (LangBot's way, the default): the gateway holds the app's Stream mode connection.
   * `http`: DingTalk POSTs each message to `/bots/{bot_id}` (the robot's HTTP message receiving mode).
   */
  mode: z.enum(['stream', 'http']).default('stream'),
  api_base_url: z.url({ protocol: /^https?$/, error: 'api_base_url: an http(s) URL' }).default('https://api.dingtalk.com/').transform((u) => u.replace(/\/+$/, '')),
});
export type DingtalkConfig = z.output<typeof DingtalkConfigSchema>;

/** The robot code the OpenAPI calls name: `robot_code`, else the Client ID (LangBot's fallback). */
export const robotCodeOf = (config: DingtalkConfig): string => config.robot_code || config.client_id;

/** Whether replies of this bot stream: only into an AI card, so only with a template to make one from. */
export const streamsReplies = (config: DingtalkConfig): boolean => config['enable-stream-reply'] && config.card_template_id !== '';
