import { z } from 'zod';

/** Bot settings of a `wecombot` bot: LangBot's wecombot adapter keys (企业微信智能机器人, webhook mode). */
export const WecomBotConfigSchema = z.object({
  /** The callback Token: every callback is signed with it. */
  Token: z.string().min(1).meta({ secret: true, title: 'Token', description: 'The AI bot\'s callback Token; every callback is signed with it' }),
  /** The callback's 43-character key; base64 of it (with `=` appended) is the 32-byte AES key. */
  EncodingAESKey: z.string().regex(/^[A-Za-z0-9+/]{43}$/, 'EncodingAESKey must be the 43 characters WeCom shows').meta({ secret: true, title: 'EncodingAESKey', description: 'The AI bot\'s callback encryption key (43 characters)' }),
  /**
   * The corp id. An AI bot's callbacks are encrypted for an empty receiver id; one encrypted for
   * this corp id is taken too (LangBot's configs carry it).
   */
  Corpid: z.string().max(100).default('').meta({ title: 'Corpid', description: 'The corp id (企业ID)' }),
  /** The bot's id (aibotid); a callback for another bot is refused when it is set. */
  BotId: z.string().max(200).default('').meta({ title: 'BotId', description: 'The AI bot\'s id (aibotid); callbacks for another bot are refused' }),
  /** The bot's name as a mention shows it: `@<robot_name>` is taken out of the text. */
  robot_name: z.string().max(200).default('').meta({ title: 'robot_name', description: 'The bot\'s name as group members mention it' }),
});
export type WecomBotConfig = z.output<typeof WecomBotConfigSchema>;
