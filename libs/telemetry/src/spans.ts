import { context, SpanStatusCode, trace, type Attributes, type Span, SpanKind } from '@opentelemetry/api';

export const tracer = trace.getTracer('@conveyor');

/** Runs `fn` in a new active span, recording an exception and error status if it throws. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind = SpanKind.INTERNAL): Promise<T> {
  return tracer.startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

export function currentTraceId(): string | undefined {
  const span = trace.getSpan(context.active());
  const id = span?.spanContext().traceId;
  return id && !/^0+$/.test(id) ? id : undefined;
}
