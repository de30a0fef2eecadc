import { z } from 'zod';
import type { Platform } from '@conveyor/platform-kit';
import { WebChatAdapter } from './adapter.js';

export const WEBCHAT = 'webchat';

/**
 * The ingress' web chat playground (`/chat`): it talks to every bot, so no bot is configured with it
 * and its chats are kept apart from the bot's platform chats. Its inbound is the ingress' `/chat/api`
 * routes (bearer token, server-sent events), not a webhook.
 */
export const webChatPlatform: Platform<Record<string, never>> = {
  name: WEBCHAT,
  botConfigSchema: z.object({}).strict(),
  configurable: false,
  streamsByDefault: true,
  outbound: (deps) => new WebChatAdapter(deps.nc, deps.topology),
};
