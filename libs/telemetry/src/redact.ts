import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** What a credential in a span is replaced with. */
export const REDACTED = '[REDACTED]';

/**
 * Query parameter names whose values are credentials: WeCom's `corpsecret` and `access_token`,
 * DingTalk's `access_token` and session webhook `session`, API keys, signatures, tickets. Matched
 * anywhere in the name, case-insensitively, so `msg_signature` or `x-api-key` are covered too; a
 * harmless value hidden by mistake costs less than a credential in a trace backend.
 */
const CREDENTIAL_PARAM = /secret|token|passw|key|sign|session|ticket|credential|auth/i;

/**
 * Telegram puts the bot token in the path (`/bot<id>:<secret>/<method>`, `/file/bot<token>/<path>`);
 * its tokens always hold a `:` (sometimes percent-encoded). The ingress' own `/bots/<uuid>` has none.
 */
const TELEGRAM_TOKEN_SEGMENT = /\/(file\/)?bot[^/?#\s]*(?::|%3A)[^/?#\s]*/gi;
/** `scheme://user:password@host`. */
const USERINFO = /(\/\/)[^/?#@\s]+@/g;
/** `name=value` at the start of a string (a bare `url.query`) or after `?`, `&` or `;`. */
const QUERY_PAIR = /(^|[?&;])([\w.\-%[\]]+)=([^&#\s]*)/g;

function paramName(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The URL, path, query or message text with the credentials above replaced by `[REDACTED]`. */
export function redactUrlText(text: string): string {
  // Fast path: most values (paths without a query, plain messages) contain none of the markers.
  if (!/[=@]|bot/i.test(text)) return text;
  return text
    .replace(USERINFO, `$1${REDACTED}@`)
    .replace(TELEGRAM_TOKEN_SEGMENT, (_m, file: string | undefined) => `/${file ?? ''}bot${REDACTED}`)
    .replace(QUERY_PAIR, (m, sep: string, name: string) => (CREDENTIAL_PARAM.test(paramName(name)) ? `${sep}${name}=${REDACTED}` : m));
}

/**
 * Span attributes that hold a request's URL or part of it, old and new semantic conventions: the
 * HTTP client instrumentations (undici for fetch, http for node:http) and the server side record
 * them as sent, credentials included.
 */
export const URL_ATTRIBUTES: readonly string[] = ['url.full', 'url.path', 'url.query', 'url.original', 'http.url', 'http.target', 'http.route'];
/** Event attributes that may quote a URL: an error's message and stack. */
const EVENT_TEXT_ATTRIBUTES = ['exception.message', 'exception.stacktrace'];

function redactValue(value: AttributeValue | undefined): AttributeValue | undefined {
  if (typeof value === 'string') return redactUrlText(value);
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? redactUrlText(v) : v)) as AttributeValue;
  return value;
}

function redactAttributes(attributes: Attributes, keys: readonly string[]): void {
  for (const key of keys) {
    const value = attributes[key];
    if (value === undefined) continue;
    const redacted = redactValue(value);
    if (redacted !== value) attributes[key] = redacted;
  }
}

/** Rewrites an ended span in place: its URL attributes, its exception events and its status message. */
export function redactSpan(span: ReadableSpan): void {
  redactAttributes(span.attributes as Attributes, URL_ATTRIBUTES);
  for (const event of span.events) if (event.attributes) redactAttributes(event.attributes, EVENT_TEXT_ATTRIBUTES);
  const status = span.status as { message?: string };
  if (status.message) status.message = redactUrlText(status.message);
}

/**
 * Wraps an exporting span processor so no span reaches it (and so no exporter, collector or trace
 * backend sees it) with a credential in a URL: a Telegram bot token in the path, WeCom's
 * `corpsecret` or an `access_token` in the query. Rewriting at the end of the span, rather than
 * in each instrumentation's hooks, covers every instrumentation and attribute set late.
 */
export class RedactingSpanProcessor implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    redactSpan(span);
    this.next.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}
