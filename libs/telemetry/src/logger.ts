import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger } from 'pino';

/** Request headers that carry a credential, lower-case as Node.js reads them. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key', 'x-chat-session-key', 'x-lb-signature', 'x-telegram-bot-api-secret-token', 'x-slack-signature', 'x-line-signature', 'x-lark-signature', 'sign', 'x-acs-dingtalk-access-token'];

/** Keys that hold a credential in bot, model and runner settings, wherever they are logged. */
const CREDENTIAL_FIELDS = ['token', 'secret', 'password', 'apiKey', 'api_key', 'api-key', 'inbound_secret', 'webhook_secret', 'header-value', 'bot_token', 'signing_secret', 'channel_access_token', 'channel_secret', 'access-token', 'app_secret', 'AppSecret', 'encrypt-key', 'verification-token', 'EncodingAESKey', 'contacts_secret', 'access_token', 'corpsecret', 'app_token', 'client_secret', 'clientSecret', 'appSecret', 'accessToken', 'sessionWebhook', 'ticket'];

/**
 * What every log line shows as `[Redacted]`: the headers of requests and responses as the request log
 * writes them, and credential fields at the top level of a logged object or one level down.
 */
export const REDACTED_LOG_PATHS: readonly string[] = [
  ...CREDENTIAL_HEADERS.map((header) => `req.headers["${header}"]`),
  'res.headers["set-cookie"]',
  ...CREDENTIAL_FIELDS.flatMap((field) => [`["${field}"]`, `*["${field}"]`]),
];

/**
 * JSON logs; every line written inside a span carries its trace_id and span_id. The request log writes
 * through this logger, so request logs are redacted too.
 */
export function createLogger(service: string, options: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const settings: LoggerOptions = {
    level: process.env.LOG_LEVEL ?? 'info',
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: [...REDACTED_LOG_PATHS],
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    ...options,
  };
  return destination ? pino(settings, destination) : pino(settings);
}
