import { createHash } from 'node:crypto';
import { DebugChat, storableText } from '@conveyor/contracts';

export const WEBCHAT_MAX_TEXT = 10_000;
/** A message body's bound; a text of 10,000 characters fits with room for JSON escapes. */
export const WEBCHAT_MAX_BODY_BYTES = 64 * 1024;

/**
 * The session a `X-Chat-Session-Key` names, or undefined for a header that is no key. The id is a hash
 * of the key, so the id (in the query log, conversation store, subjects and logs) never opens the
 * session; 128 bits of it keep two keys from meeting in one session.
 */
export function webChatSessionId(sessionKey: string | undefined): string | undefined {
  if (sessionKey === undefined || !DebugChat.CHAT_SESSION_KEY_RE.test(sessionKey)) return undefined;
  return `web-${createHash('sha256').update('conveyor web chat session\0').update(sessionKey).digest('base64url').slice(0, 22)}`;
}

/** A message body `{"text": "..."}` made storable, or the 400 error the caller gets. */
export function parseWebChatMessage(rawBody: Buffer): { ok: true; text: string } | { ok: false; error: string } {
  const notJson = { ok: false, error: 'body must be JSON {"text": "..."}' } as const;
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return notJson;
  }
  if (parsed === null) return notJson;
  const rawText = typeof parsed === 'object' && 'text' in parsed ? parsed.text : undefined;
  const text = typeof rawText === 'string' ? storableText(rawText) : '';
  if (!text.trim() || text.length > WEBCHAT_MAX_TEXT) return { ok: false, error: `text must be 1–${WEBCHAT_MAX_TEXT} characters` };
  return { ok: true, text };
}
