import { storableText } from '@conveyor/contracts';

/** The session ids the page makes (`web-<uuid>`), and a bound: Postgres and NATS subjects cannot hold every id. */
export const WEBCHAT_SESSION_RE = /^[A-Za-z0-9_-]{1,100}$/;
export const WEBCHAT_MAX_TEXT = 10_000;
/** A message body's bound; a text of 10,000 characters fits with room for JSON escapes. */
export const WEBCHAT_MAX_BODY_BYTES = 64 * 1024;

export function isWebChatSessionId(sessionId: string): boolean {
  return WEBCHAT_SESSION_RE.test(sessionId);
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
