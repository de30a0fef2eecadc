import type { ReplyRoute } from './messages.js';

/** A chat as a query's route names it: the bot, the adapter the message came through, and LangBot's launcher. */
export interface ChatRef {
  botId: string;
  adapter: ReplyRoute['adapter'];
  launcherType: string;
  launcherId: string;
}

/** A chat as conversations (Postgres) and session queues (Redis) are keyed. */
export interface ChatKey {
  botId: string;
  launcherType: string;
  launcherId: string;
}

/**
 * Adapters whose chats keep LangBot's key (`person`/`group` and the platform's id). A bot has one of
 * them as its platform, so their chats never meet under one bot, and conversations stored before the
 * namespace existed stay where they are.
 */
const PLATFORM_ADAPTERS: ReadonlySet<ChatRef['adapter']> = new Set(['http-bot', 'telegram']);

/**
 * The one place a chat's storage key is built. The web chat can talk to any bot with a session id of
 * the browser's choosing, so its chats carry the adapter in the launcher type (`webchat:person`):
 * LangBot's launcher types are only `person` and `group`, so no id a platform sends can reach a web
 * chat conversation, and no web chat session id can reach a platform's.
 */
export function chatKey(chat: ChatRef): ChatKey {
  const launcherType = PLATFORM_ADAPTERS.has(chat.adapter) ? chat.launcherType : `${chat.adapter}:${chat.launcherType}`;
  return { botId: chat.botId, launcherType, launcherId: chat.launcherId };
}
