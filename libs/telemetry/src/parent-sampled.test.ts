import { test } from 'node:test';
import assert from 'node:assert/strict';
import { context, trace, TraceFlags, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AlwaysOnSampler, BasicTracerProvider, InMemorySpanExporter, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import { ParentSampledTracerProvider, samplerFollowsParent } from './parent-sampled.js';

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

function tracers(sampler: Sampler) {
  const exporter = new InMemorySpanExporter();
  const sdk = new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, tracer: new ParentSampledTracerProvider(sdk).getTracer('test') };
}

const parentWith = (flags: TraceFlags) => trace.setSpanContext(context.active(), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: flags, isRemote: true });

test('under a parent-based sampler, a child of an unsampled parent is the parent itself, recording nothing', async () => {
  const { exporter, tracer } = tracers(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
  const unsampled = parentWith(TraceFlags.NONE);
  const child = tracer.startSpan('redis EVALSHA', { attributes: { 'db.system': 'redis' } }, unsampled);
  assert.equal(child.isRecording(), false);
  assert.deepEqual(child.spanContext(), trace.getSpanContext(unsampled));
  // Active spans too, with the parent's trace id in the context the function runs in.
  const seen = await context.with(unsampled, () =>
    tracer.startActiveSpan('stage', async (span: Span) => {
      await new Promise((resolve) => setImmediate(resolve));
      span.end();
      return trace.getSpanContext(context.active())?.traceId;
    }),
  );
  assert.equal(seen, '0af7651916cd43dd8448eb211c80319c');
  assert.deepEqual(exporter.getFinishedSpans(), []);
});

test('a child of a sampled parent and a root span are the SDK\'s, sampled and exported as before', () => {
  const { exporter, tracer } = tracers(new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(1) }));
  const child = tracer.startSpan('stage', {}, parentWith(TraceFlags.SAMPLED));
  assert.equal(child.isRecording(), true);
  assert.equal(child.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
  assert.notEqual(child.spanContext().spanId, 'b7ad6b7169203331');
  child.end();
  // `root` ignores the unsampled parent: the sampler decides.
  tracer.startSpan('webhook', { root: true }, parentWith(TraceFlags.NONE)).end();
  const names = exporter.getFinishedSpans().map((s) => s.name);
  assert.deepEqual(names, ['stage', 'webhook']);
});

test('only parent-based samplers are followed (the default is one)', () => {
  assert.equal(samplerFollowsParent({}), true);
  assert.equal(samplerFollowsParent({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' }), true);
  assert.equal(samplerFollowsParent({ OTEL_TRACES_SAMPLER: 'traceidratio' }), false);
  assert.equal(samplerFollowsParent({ OTEL_TRACES_SAMPLER: 'always_on' }), false);
});

test('a tracer asked for again by name, version and schema is the same one', () => {
  const provider = new ParentSampledTracerProvider(new BasicTracerProvider());
  const first = provider.getTracer('@conveyor/bus', '1.0.0');
  assert.equal(provider.getTracer('@conveyor/bus', '1.0.0'), first);
  assert.notEqual(provider.getTracer('@conveyor/bus', '2.0.0'), first);
  assert.notEqual(provider.getTracer('@conveyor/bus', '1.0.0', { schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' }), first);
  assert.notEqual(provider.getTracer('@conveyor/persistence', '1.0.0'), first);
});
