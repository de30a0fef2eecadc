/**
 * The web chat's session and the console's debug chat, which reaches the ingress web chat through the
 * admin service behind its sign-in (the admin service adds the web chat token itself, so the browser
 * never holds it). Paths of the debug chat are relative to the admin API base, those of the web chat
 * to the ingress' `/chat/api`; both are the same three:
 *   GET  /bots/:botId/session/events    server-sent events, `event: part`
 *   POST /bots/:botId/session/messages  `DebugChatMessage` → 202 `DebugChatAccepted`
 *   POST /bots/:botId/session/reset     → 201 `{removed}`
 *
 * A chat session is named by a key only its browser holds, sent in the `X-Chat-Session-Key` header:
 * the session id the pipeline, the query log and the console show is derived from the key one way, so
 * knowing a session's id (a viewer reads it in the query log) does not open it, and the shared web chat
 * token opens no session on its own. The debug chat binds each key to the signed-in user as well.
 */
import { z } from 'zod';

export const DEBUG_CHAT_PATH = '/debug-chat';
export const CHAT_SESSION_KEY_HEADER = 'x-chat-session-key';
/** A session key: 32 to 128 URL-safe characters (the pages make 43, 256 random bits). */
export const CHAT_SESSION_KEY_RE = /^[A-Za-z0-9_-]{32,128}$/;

export const DebugChatMessage = z.strictObject({ text: z.string().trim().min(1).max(10_000) });
/** `sessionId` is the id the key names: what the query log and the conversation store show. */
export const DebugChatAccepted = z.object({ queryId: z.string(), replyTo: z.string(), sessionId: z.string() });
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
