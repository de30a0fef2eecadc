import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { context, diag, DiagConsoleLogger, metrics, propagation, trace, type TextMapPropagator } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, diagLogLevelFromString, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { registerInstrumentations, type InstrumentationBase } from '@opentelemetry/instrumentation';
import { detectResources, envDetector, hostDetector, osDetector, processDetector, resourceFromAttributes, serviceInstanceIdDetector, type ResourceDetector } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, PeriodicExportingMetricReader, type IMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { ParentSampledTracerProvider, samplerFollowsParent } from './parent-sampled.js';
import { RedactingSpanProcessor } from './redact.js';

/**
 * Started before the application is imported (see register.ts) so that instrumentations can patch
 * http, undici, pg and ioredis as they load. Configured by the standard OTEL_* variables; see
 * traceExporters and metricExporters for where traces and metrics go, otlpProtocol for how.
 */
let prometheus: PrometheusExporter | undefined;
let providers: { tracer?: BasicTracerProvider; meter?: MeterProvider } | undefined;

export function prometheusExporter(): PrometheusExporter | undefined {
  return prometheus;
}

export type TraceExporterName = 'otlp' | 'console';

/**
 * The exporters OTEL_TRACES_EXPORTER names (comma-separated `otlp`, `console`; `none` for none).
 * Unset, traces go over OTLP/HTTP only when an endpoint is configured, so a bare `npm start` needs
 * no collector. Other names are ignored with a warning, as the OTel SDK does.
 */
export function traceExporters(env: NodeJS.ProcessEnv): TraceExporterName[] {
  if (env.OTEL_SDK_DISABLED === 'true') return [];
  const names = [...new Set((env.OTEL_TRACES_EXPORTER ?? '').split(',').map((n) => n.trim()).filter(Boolean))];
  if (names.length === 0) return env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? ['otlp'] : [];
  if (names.includes('none')) return [];
  const supported = names.filter((n): n is TraceExporterName => n === 'otlp' || n === 'console');
  const ignored = names.filter((n) => !supported.includes(n as TraceExporterName));
  if (ignored.length) console.warn(`OTEL_TRACES_EXPORTER: ignoring unsupported ${ignored.join(', ')} (supported: otlp, console, none)`);
  return supported;
}

export type MetricExporterName = 'prometheus' | 'otlp';

/**
 * The exporters OTEL_METRICS_EXPORTER names (comma-separated `prometheus`, `otlp`; `none` for none).
 * Unset, `prometheus`: each service serves /metrics to be scraped. `otlp` pushes every
 * OTEL_METRIC_EXPORT_INTERVAL to OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT);
 * `prometheus,otlp` does both. Other names are ignored with a warning, as for traces.
 */
export function metricExporters(env: NodeJS.ProcessEnv): MetricExporterName[] {
  const names = [...new Set((env.OTEL_METRICS_EXPORTER ?? '').split(',').map((n) => n.trim()).filter(Boolean))];
  if (names.length === 0) return ['prometheus'];
  if (names.includes('none')) return [];
  const supported = names.filter((n): n is MetricExporterName => n === 'prometheus' || n === 'otlp');
  const ignored = names.filter((n) => !supported.includes(n as MetricExporterName));
  if (ignored.length) console.warn(`OTEL_METRICS_EXPORTER: ignoring unsupported ${ignored.join(', ')} (supported: prometheus, otlp, none)`);
  return supported;
}

export type OtlpProtocol = 'http/json' | 'http/protobuf' | 'grpc';
const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/json', 'http/protobuf', 'grpc'];

/** A telemetry setting the process cannot start with. */
export class TelemetryConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TelemetryConfigError';
  }
}

/**
 * How a signal goes over OTLP: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / _METRICS_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL, else `http/json` (what Conveyor always sent; the OpenTelemetry
 * specification's default is http/protobuf, which any collector also takes on 4318). An unknown value stops the start: with a
 * protocol the endpoint does not speak, every export would fail and the telemetry be lost unnoticed.
 */
export function otlpProtocol(env: NodeJS.ProcessEnv, signal: 'traces' | 'metrics'): OtlpProtocol {
  const variable = signal === 'traces' ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL';
  const specific = env[variable]?.trim();
  const value = specific || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/json';
  const protocol = OTLP_PROTOCOLS.find((p) => p === value);
  if (!protocol) {
    throw new TelemetryConfigError(`${specific ? variable : 'OTEL_EXPORTER_OTLP_PROTOCOL'}=${JSON.stringify(value)} is not supported (supported: ${OTLP_PROTOCOLS.join(', ')})`);
  }
  return protocol;
}

const DEFAULT_METRIC_EXPORT_INTERVAL_MS = 60_000;
const DEFAULT_METRIC_EXPORT_TIMEOUT_MS = 30_000;

/** A positive whole number of milliseconds from `name`, else the default (with a warning when the value is not one). */
function millis(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (Number.isInteger(value) && value > 0) return value;
  console.warn(`${name}: ${JSON.stringify(raw)} is not a positive number of milliseconds; using ${fallback}`);
  return fallback;
}

/** OTEL_METRIC_EXPORT_INTERVAL and OTEL_METRIC_EXPORT_TIMEOUT (ms); the timeout is at most the interval, as the reader requires. */
export function metricExportTiming(env: NodeJS.ProcessEnv): { intervalMs: number; timeoutMs: number } {
  const intervalMs = millis(env, 'OTEL_METRIC_EXPORT_INTERVAL', DEFAULT_METRIC_EXPORT_INTERVAL_MS);
  return { intervalMs, timeoutMs: Math.min(millis(env, 'OTEL_METRIC_EXPORT_TIMEOUT', DEFAULT_METRIC_EXPORT_TIMEOUT_MS), intervalMs) };
}

// The exporters read their endpoint, headers (OTEL_EXPORTER_OTLP_HEADERS, which may carry a token and is
// never logged here), compression and TLS settings from the environment themselves. Only the protocol's
// own package is loaded: the gRPC ones bring a whole gRPC client, which a service not using it should
// not pay for at every start.
async function otlpTraceExporter(protocol: OtlpProtocol): Promise<SpanExporter> {
  if (protocol === 'grpc') return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter();
  if (protocol === 'http/protobuf') return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
}

async function otlpMetricExporter(protocol: OtlpProtocol): Promise<PushMetricExporter> {
  if (protocol === 'grpc') return new (await import('@opentelemetry/exporter-metrics-otlp-grpc')).OTLPMetricExporter();
  if (protocol === 'http/protobuf') return new (await import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter();
  return new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter();
}

async function spanProcessor(exporter: TraceExporterName, env: NodeJS.ProcessEnv): Promise<SpanProcessor> {
  // Console output is for looking at spans as they end, so it is not batched.
  const exporting = exporter === 'console' ? new SimpleSpanProcessor(new ConsoleSpanExporter()) : new BatchSpanProcessor(await otlpTraceExporter(otlpProtocol(env, 'traces')));
  // HTTP client spans record the URL as sent: Telegram's bot token and WeCom's corpsecret are in it.
  return new RedactingSpanProcessor(exporting);
}

/**
 * Ends spans without sending them anywhere: with no exporter, spans are still sampled and recorded as
 * configured (a no-op span would have an all-zero trace id, and log lines would lose the id that ties
 * them to a message), and simply not exported.
 */
class UnexportedSpans implements SpanProcessor {
  onStart(): void {}
  onEnd(): void {}
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/**
 * The version reported as `service.version`: CONVEYOR_VERSION (the image build sets it), else the
 * version in the package.json nearest to the entry script (services/<name>/package.json), else npm's.
 * OTEL_RESOURCE_ATTRIBUTES=service.version=... overrides all of them (the SDK's env detector wins).
 */
export function serviceVersion(env: NodeJS.ProcessEnv = process.env, entry: string | undefined = process.argv[1]): string {
  if (env.CONVEYOR_VERSION) return env.CONVEYOR_VERSION;
  if (entry) {
    let dir = path.dirname(path.resolve(entry));
    for (let i = 0; i < 4; i++) {
      const file = path.join(dir, 'package.json');
      if (existsSync(file)) {
        try {
          const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
          if (typeof version === 'string') return version;
        } catch {
          // not JSON: keep looking upwards
        }
      }
      const up = path.dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return env.npm_package_version ?? '0.0.0';
}

/**
 * `service.instance.id`: the pod's name where the deployment passes it (POD_NAME, from the downward
 * API), else a random id per process. Set here rather than in each manifest's OTEL_RESOURCE_ATTRIBUTES,
 * because a container's own `env` entry replaces the whole variable and would drop the attributes an
 * overlay sets there (deployment.environment.name).
 */
export function serviceInstanceId(env: NodeJS.ProcessEnv = process.env): string {
  return env.POD_NAME || randomUUID();
}

/** The auto-instrumentations every service runs: outgoing and incoming HTTP, fetch, Postgres and Redis. */
export function createInstrumentations(): InstrumentationBase[] {
  return [
    new HttpInstrumentation({
      // Probes and scrapes would otherwise start a trace each.
      ignoreIncomingRequestHook: (req) => /^\/(health|metrics)/.test(req.url ?? ''),
    }),
    new UndiciInstrumentation(),
    new PgInstrumentation({ requireParentSpan: true }),
    // The command name only: the arguments are keys and values, and the values hold what users wrote
    // (a conversation's messages, a held answer), which no trace backend should see.
    new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
  ];
}

/**
 * The packages the instrumentations patch: the only modules the ESM loader hook needs to wrap. Every
 * other module loads untouched, which is most of a service's start-up time saved.
 */
export function instrumentedModuleNames(instrumentations: readonly InstrumentationBase[]): string[] {
  return [...new Set(instrumentations.flatMap((i) => i.getModuleDefinitions().map((d) => d.name)))];
}

const RESOURCE_DETECTORS = new Map<string, ResourceDetector>([
  ['env', envDetector],
  ['host', hostDetector],
  ['os', osDetector],
  ['process', processDetector],
  ['serviceinstance', serviceInstanceIdDetector],
]);

/** The entries of `known` that `names` names, in their order; the rest are warned about under `variable`. */
function named<T>(variable: string, names: string[], known: ReadonlyMap<string, T>, extra: string[]): T[] {
  const ignored = names.filter((n) => !known.has(n));
  if (ignored.length) console.warn(`${variable}: ignoring unsupported ${ignored.join(', ')} (supported: ${[...known.keys(), ...extra].join(', ')})`);
  return names.flatMap((n) => {
    const found = known.get(n);
    return found === undefined ? [] : [found];
  });
}

/**
 * The resource detectors OTEL_NODE_RESOURCE_DETECTORS names (comma-separated env, host, os, process,
 * serviceinstance; `all`; `none`), by default env, process and host, as the OpenTelemetry Node.js SDK
 * chooses them. The env detector reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
 */
export function resourceDetectors(env: NodeJS.ProcessEnv): ResourceDetector[] {
  const names = [...new Set((env.OTEL_NODE_RESOURCE_DETECTORS ?? '').split(',').map((n) => n.trim()).filter(Boolean))];
  if (names.length === 0) return [envDetector, processDetector, hostDetector];
  if (names.includes('none')) return [];
  if (names.includes('all')) return [...RESOURCE_DETECTORS.values()];
  return named('OTEL_NODE_RESOURCE_DETECTORS', names, RESOURCE_DETECTORS, ['all', 'none']);
}

const PROPAGATORS = new Map<string, () => TextMapPropagator>([
  ['tracecontext', () => new W3CTraceContextPropagator()],
  ['baggage', () => new W3CBaggagePropagator()],
]);

/**
 * The propagators OTEL_PROPAGATORS names (comma-separated `tracecontext`, `baggage`; `none`), by
 * default both: W3C trace context is what every hop of Conveyor carries. Other names are ignored with
 * a warning.
 */
export function propagatorsOf(env: NodeJS.ProcessEnv): TextMapPropagator | undefined {
  const names = [...new Set((env.OTEL_PROPAGATORS ?? 'tracecontext,baggage').split(',').map((n) => n.trim()).filter(Boolean))];
  if (names.includes('none')) return undefined;
  return new CompositePropagator({ propagators: named('OTEL_PROPAGATORS', names, PROPAGATORS, ['none']).map((make) => make()) });
}

/**
 * Sets up tracing and metrics as the OpenTelemetry Node.js SDK would from the standard OTEL_*
 * variables (sampler and span limits are read by the tracer provider itself), with only the parts a
 * service uses loaded: a service's start-up is mostly module loading, and the full SDK package loads
 * every exporter, logs and configuration file support besides.
 */
export async function startTelemetry(env: NodeJS.ProcessEnv = process.env, instrumentations: InstrumentationBase[] = createInstrumentations()): Promise<void> {
  if (providers) return;
  const logLevel = env.OTEL_LOG_LEVEL?.trim();
  if (logLevel) diag.setLogger(new DiagConsoleLogger(), { logLevel: diagLogLevelFromString(logLevel) });
  const exporters = traceExporters(env);
  const spanProcessors = exporters.length ? await Promise.all(exporters.map((e) => spanProcessor(e, env))) : [new UnexportedSpans()];
  const metricReaders: IMetricReader[] = [];
  for (const name of metricExporters(env)) {
    if (name === 'prometheus') {
      // Served by each service's own HTTP server on /metrics rather than a port of its own.
      prometheus = new PrometheusExporter({ preventServerStart: true });
      metricReaders.push(prometheus);
    } else {
      const { intervalMs, timeoutMs } = metricExportTiming(env);
      metricReaders.push(new PeriodicExportingMetricReader({ exporter: await otlpMetricExporter(otlpProtocol(env, 'metrics')), exportIntervalMillis: intervalMs, exportTimeoutMillis: timeoutMs }));
    }
  }
  providers = {};
  // As the SDK does: OTEL_SDK_DISABLED leaves the API's no-op providers in place.
  if (env.OTEL_SDK_DISABLED === 'true') return;
  // The detected attributes (OTEL_RESOURCE_ATTRIBUTES among them) win over these defaults.
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME ?? 'conveyor',
    [ATTR_SERVICE_VERSION]: serviceVersion(env),
    'service.namespace': 'conveyor',
    'service.instance.id': serviceInstanceId(env),
  }).merge(detectResources({ detectors: resourceDetectors(env) }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const propagator = propagatorsOf(env);
  if (propagator) propagation.setGlobalPropagator(propagator);
  if (metricReaders.length) {
    providers.meter = new MeterProvider({ resource, readers: metricReaders });
    metrics.setGlobalMeterProvider(providers.meter);
  }
  providers.tracer = new BasicTracerProvider({ resource, spanProcessors });
  const tracing = samplerFollowsParent(env) ? new ParentSampledTracerProvider(providers.tracer) : providers.tracer;
  trace.setGlobalTracerProvider(tracing);
  registerInstrumentations({ instrumentations, tracerProvider: tracing, ...(providers.meter ? { meterProvider: providers.meter } : {}) });
}

/** Flushes pending spans and pushes the last metrics; called on shutdown so the last message's trace is not lost. */
export async function shutdownTelemetry(): Promise<void> {
  const stopping = providers;
  providers = undefined;
  await Promise.all([stopping?.tracer?.shutdown(), stopping?.meter?.shutdown()]).catch(() => undefined);
}
