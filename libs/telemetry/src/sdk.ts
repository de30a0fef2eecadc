import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { PeriodicExportingMetricReader, type IMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { InstrumentationBase } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { RedactingSpanProcessor } from './redact.js';

/**
 * Started before the application is imported (see register.ts) so that instrumentations can patch
 * http, undici, pg and ioredis as they load. Configured by the standard OTEL_* variables; see
 * traceExporters and metricExporters for where traces and metrics go, otlpProtocol for how.
 */
let prometheus: PrometheusExporter | undefined;
let sdk: NodeSDK | undefined;

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
// never logged here), compression and TLS settings from the environment themselves.
function otlpTraceExporter(protocol: OtlpProtocol): SpanExporter {
  if (protocol === 'grpc') return new GrpcTraceExporter();
  if (protocol === 'http/protobuf') return new ProtobufTraceExporter();
  return new JsonTraceExporter();
}

function otlpMetricExporter(protocol: OtlpProtocol): PushMetricExporter {
  if (protocol === 'grpc') return new GrpcMetricExporter();
  if (protocol === 'http/protobuf') return new ProtobufMetricExporter();
  return new JsonMetricExporter();
}

function spanProcessor(exporter: TraceExporterName, env: NodeJS.ProcessEnv): SpanProcessor {
  // Console output is for looking at spans as they end, so it is not batched.
  const exporting = exporter === 'console' ? new SimpleSpanProcessor(new ConsoleSpanExporter()) : new BatchSpanProcessor(otlpTraceExporter(otlpProtocol(env, 'traces')));
  // HTTP client spans record the URL as sent: Telegram's bot token and WeCom's corpsecret are in it.
  return new RedactingSpanProcessor(exporting);
}

/**
 * Ends spans without sending them anywhere. The SDK registers its tracer provider only when there is a
 * span processor; without one every span is a no-op with an all-zero trace id, and log lines lose the
 * id that ties them to a message. With this, spans are sampled and recorded as configured and simply
 * not exported.
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

export function startTelemetry(env: NodeJS.ProcessEnv = process.env, instrumentations: InstrumentationBase[] = createInstrumentations()): void {
  if (sdk) return;
  const exporters = traceExporters(env);
  const spanProcessors = exporters.length ? exporters.map((e) => spanProcessor(e, env)) : [new UnexportedSpans()];
  const metricReaders: IMetricReader[] = [];
  for (const name of metricExporters(env)) {
    if (name === 'prometheus') {
      // Served by each service's own HTTP server on /metrics rather than a port of its own.
      prometheus = new PrometheusExporter({ preventServerStart: true });
      metricReaders.push(prometheus);
    } else {
      const { intervalMs, timeoutMs } = metricExportTiming(env);
      metricReaders.push(new PeriodicExportingMetricReader({ exporter: otlpMetricExporter(otlpProtocol(env, 'metrics')), exportIntervalMillis: intervalMs, exportTimeoutMillis: timeoutMs }));
    }
  }
  sdk = new NodeSDK({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME ?? 'conveyor',
      [ATTR_SERVICE_VERSION]: serviceVersion(env),
      'service.namespace': 'conveyor',
      'service.instance.id': serviceInstanceId(env),
    }),
    spanProcessors,
    metricReaders,
    instrumentations,
  });
  sdk.start();
}

/** Flushes pending spans and pushes the last metrics; called on shutdown so the last message's trace is not lost. */
export async function shutdownTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
  sdk = undefined;
}
