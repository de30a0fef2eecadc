import type { Options } from 'pino-http';
import type { Logger } from '@conveyor/telemetry';

/**
 * pino-http settings of every service. A line per request at info would cost CPU on every webhook, so
 * requests log at debug and only failed ones at warn; probes and scrapes not at all. pino-http writes
 * through the service logger, whose redaction hides credential headers.
 */
export function requestLogging(logger: Logger): Options {
  return {
    logger,
    autoLogging: { ignore: (req) => /^\/(health|metrics)/.test(req.url ?? '') },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'warn' : 'debug'),
  };
}
