/**
 * The console's debug chat: the ingress web chat, reached through the admin service behind its
 * sign-in (the admin service adds the web chat token itself, so the browser never holds it). Paths are
 * relative to the admin API base:
 *   GET  /debug-chat/bots/:botId/sessions/:sessionId/events    server-sent events, `event: part`
 *   POST /debug-chat/bots/:botId/sessions/:sessionId/messages  `DebugChatMessage` → 202 `DebugChatAccepted`
 *   POST /debug-chat/bots/:botId/sessions/:sessionId/reset     → 201 `{removed}`
 */
import { z } from 'zod';

export const DEBUG_CHAT_PATH = '/debug-chat';
/** The web chat's session ids (the ingress refuses others). */
export const DEBUG_CHAT_SESSION_RE = /^[A-Za-z0-9_-]{1,100}$/;

export const DebugChatMessage = z.strictObject({ text: z.string().trim().min(1).max(10_000) });
export const DebugChatAccepted = z.object({ queryId: z.string(), replyTo: z.string() });
export const DebugChatReset = z.object({ removed: z.boolean() });

/** One reply part as the web chat streams it: a streamed part carries the whole text so far. */
export const WebChatPart = z.object({
  queryId: z.string(),
  replyTo: z.string(),
  text: z.string(),
  isFinal: z.boolean(),
  stream: z.boolean(),
});
export type WebChatPart = z.infer<typeof WebChatPart>;
