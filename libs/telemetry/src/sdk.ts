import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';

/**
 * Started before the application is imported (see register.ts) so that instrumentations can patch
 * http, undici, pg and ioredis as they load. Configured by the standard OTEL_* variables; traces are
 * exported over OTLP/HTTP only when an endpoint is configured, so a bare `npm start` needs no collector.
 */
let prometheus: PrometheusExporter | undefined;
let sdk: NodeSDK | undefined;

export function prometheusExporter(): PrometheusExporter | undefined {
  return prometheus;
}

function traceExportConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
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

export function startTelemetry(env: NodeJS.ProcessEnv = process.env): void {
  if (sdk) return;
  const spanProcessors: SpanProcessor[] = traceExportConfigured(env) ? [new BatchSpanProcessor(new OTLPTraceExporter())] : [];
  // Served by each service's own HTTP server on /metrics rather than a port of its own.
  prometheus = new PrometheusExporter({ preventServerStart: true });
  sdk = new NodeSDK({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME ?? 'conveyor',
      [ATTR_SERVICE_VERSION]: serviceVersion(env),
      'service.namespace': 'conveyor',
    }),
    spanProcessors,
    metricReader: prometheus,
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes would otherwise start a trace each.
        ignoreIncomingRequestHook: (req) => /^\/(health|metrics)/.test(req.url ?? ''),
      }),
      new UndiciInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
}

/** Flushes pending spans; called on shutdown so the last message's trace is not lost. */
export async function shutdownTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
  sdk = undefined;
}
