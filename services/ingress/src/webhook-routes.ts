import { match, type MatchFunction, type ParamData } from 'path-to-regexp';

/**
 * A webhook request: `/bots/{bot_uuid}[/...]` (every bot's webhook, any method) or the Telegram path
 * kept from before it (`POST /telegram/{bot_id}`).
 */
export type WebhookRoute = { kind: 'bot'; botId: string; subPath: string } | { kind: 'telegram'; botId: string };

/**
 * Matched as Express matches the service's routes (see `strictExpressAdapter`): case-sensitive, no
 * trailing slash, each parameter percent-decoded. A parameter that does not decode throws, and the
 * request goes to Express, which answers it as before (400).
 */
const MATCH_OPTIONS = { sensitive: true, end: true, trailing: false, decode: (v: string) => (v.includes('%') ? decodeURIComponent(v) : v) };
const botPath: MatchFunction<ParamData> = match('/bots/:botId', MATCH_OPTIONS);
const botSubPath: MatchFunction<ParamData> = match('/bots/:botId/*subPath', MATCH_OPTIONS);
const telegramPath: MatchFunction<ParamData> = match('/telegram/:botId', MATCH_OPTIONS);

/** The webhook route of a request, or undefined for every other request (and for one Express must answer). */
export function webhookRouteOf(method: string, url: string): WebhookRoute | undefined {
  const end = url.indexOf('?');
  const path = end === -1 ? url : url.slice(0, end);
  try {
    if (path.startsWith('/bots/')) {
      const whole = botPath(path);
      if (whole) return { kind: 'bot', botId: String(whole.params.botId), subPath: '' };
      const sub = botSubPath(path);
      if (!sub) return undefined;
      const rest = sub.params.subPath;
      return { kind: 'bot', botId: String(sub.params.botId), subPath: Array.isArray(rest) ? rest.join('/') : String(rest) };
    }
    if (method === 'POST' && path.startsWith('/telegram/')) {
      const found = telegramPath(path);
      if (found) return { kind: 'telegram', botId: String(found.params.botId) };
    }
  } catch {
    return undefined;
  }
  return undefined;
}
