import { pino, type Logger, type LoggerOptions } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger } from 'pino';

/** JSON logs; every line written inside a span carries its trace_id and span_id. */
export function createLogger(service: string, options: LoggerOptions = {}): Logger {
  return pino({
    level: process.env.LOG_LEVEL ?? 'info',
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    ...options,
  });
}
