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
 * Adapters every bot has besides its own platform, whose session ids the caller chooses. Every other
 * adapter is a bot's one platform: its chats keep LangBot's key (`person`/`group` and the platform's
 * id), as they never meet another platform's under one bot, and conversations stored before the
 * namespace existed stay where they are. A new platform needs no entry here.
 */
const NAMESPACED_ADAPTERS: ReadonlySet<ChatRef['adapter']> = new Set(['webchat']);

/**
 * The one place a chat's storage key is built. The web chat can talk to any bot with a session id of
 * the browser's choosing, so its chats carry the adapter in the launcher type (`webchat:person`):
 * LangBot's launcher types are only `person` and `group`, so no id a platform sends can reach a web
 * chat conversation, and no web chat session id can reach a platform's.
 */
export function chatKey(chat: ChatRef): ChatKey {
  const launcherType = NAMESPACED_ADAPTERS.has(chat.adapter) ? `${chat.adapter}:${chat.launcherType}` : chat.launcherType;
  return { botId: chat.botId, launcherType, launcherId: chat.launcherId };
}
