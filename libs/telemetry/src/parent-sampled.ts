import { context, isSpanContextValid, trace, TraceFlags, type Context, type Span, type SpanOptions, type Tracer, type TracerOptions, type TracerProvider } from '@opentelemetry/api';

/**
 * Whether OTEL_TRACES_SAMPLER names a parent-based sampler: unset (the SDK's default,
 * parentbased_always_on) or any `parentbased_*`. Under one, a span whose parent is not sampled is never
 * sampled either.
 */
export function samplerFollowsParent(env: NodeJS.ProcessEnv): boolean {
  const name = env.OTEL_TRACES_SAMPLER?.trim() ?? '';
  return name === '' || name.startsWith('parentbased_');
}

/**
 * Tracers that hand back the parent itself, not recording, for a span whose parent is not sampled:
 * under a parent-based sampler that span would not be recorded anyway, but the SDK would still give it
 * a span id, sanitise its attributes, ask the sampler and allocate it, for every stage and every
 * Redis, Postgres and HTTP call of every message that is not traced. The trace id and the parent's
 * span id stay in the context, so log lines and the traceparent sent on carry them as before. Spans
 * with a sampled parent, and root spans, go to the SDK's tracer unchanged.
 */
export class ParentSampledTracerProvider implements TracerProvider {
  /**
   * One tracer per name, version and schema, as the SDK's provider keeps them: code that asks the API
   * for its tracer at every span (`trace.getTracer(...)` inside a function) reaches this provider each
   * time, and the set of names is the code's own, so it stays small.
   */
  private readonly tracers = new Map<string, Tracer>();

  constructor(private readonly inner: TracerProvider) {}

  getTracer(name: string, version?: string, options?: TracerOptions): Tracer {
    const key = `${name}\u0000${version ?? ''}\u0000${options?.schemaUrl ?? ''}`;
    let tracer = this.tracers.get(key);
    if (!tracer) {
      tracer = new ParentSampledTracer(this.inner.getTracer(name, version, options));
      this.tracers.set(key, tracer);
    }
    return tracer;
  }
}

class ParentSampledTracer implements Tracer {
  constructor(private readonly inner: Tracer) {}

  startSpan(name: string, options?: SpanOptions, ctx: Context = context.active()): Span {
    if (options?.root !== true) {
      const parent = trace.getSpanContext(ctx);
      if (parent && isSpanContextValid(parent) && (parent.traceFlags & TraceFlags.SAMPLED) === 0) return trace.wrapSpanContext(parent);
    }
    return this.inner.startSpan(name, options, ctx);
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, ctx: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => ReturnType<F>>(name: string, a: SpanOptions | F, b?: Context | F, c?: F): ReturnType<F> {
    const fn = typeof a === 'function' ? a : typeof b === 'function' ? b : c;
    if (fn === undefined) throw new TypeError('startActiveSpan needs a function');
    const options = typeof a === 'function' ? undefined : a;
    const ctx = b !== undefined && typeof b !== 'function' ? b : context.active();
    const span = this.startSpan(name, options, ctx);
    // The parent handed back: the context already carries its span context, so no new one is made.
    const active = span.spanContext() === trace.getSpanContext(ctx) ? ctx : trace.setSpan(ctx, span);
    return context.with(active, fn, undefined, span);
  }
}
