import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { pino } from 'pino';
import type { Logger } from '@conveyor/telemetry';

/** Probes and scrapes are not traffic: they are never logged. */
const UNLOGGED_PATHS = /^\/(health|metrics)/;

export type RequestLoggingMiddleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/**
 * One line per finished request: at debug for a served one, at warn for a failed one (a 5xx, or a
 * response the connection closed before it was written). Nothing is built per request beyond one
 * listener: the line's fields are read only when its level is enabled, so a webhook served at the
 * default level costs no serialisation or redaction. The line goes through the service logger, whose
 * redaction hides credential headers.
 */
export function requestLogging(logger: Logger): RequestLoggingMiddleware {
  return (req, res, next) => {
    if (UNLOGGED_PATHS.test(req.url ?? '')) return next();
    const started = performance.now();
    res.once('close', () => {
      const failed = res.statusCode >= 500 || !res.writableFinished;
      const level = failed ? 'warn' : 'debug';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        { req: pino.stdSerializers.req(req), res: pino.stdSerializers.res(res), responseTime: Math.round(performance.now() - started) },
        failed ? 'request failed' : 'request completed',
      );
    });
    next();
  };
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * Nest's own log lines (start-up, routing, uncaught handler errors) through the service logger.
 * Nest passes the logging class's name as the last argument, and an error's stack before it.
 */
export class NestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.logger.isLevelEnabled(level)) return;
    const last = params.at(-1);
    const context = typeof last === 'string' ? last : undefined;
    const rest = context === undefined ? params : params.slice(0, -1);
    const stack = level === 'error' || level === 'fatal' ? rest.find((p): p is string => typeof p === 'string') : undefined;
    if (message instanceof Error) this.logger[level]({ err: message, context }, message.message);
    else if (typeof message === 'object' && message !== null) this.logger[level]({ ...message, context });
    else this.logger[level]({ context, ...(stack ? { stack } : {}) }, String(message));
  }
}
