import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInstrumentations, instrumentedModuleNames, metricExporters, metricExportTiming, otlpProtocol, propagatorsOf, resourceDetectors, TelemetryConfigError, traceExporters } from './sdk.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// A process started the way services are (telemetry preloaded) that ends one span and shuts down.
const script = `
import { trace } from '@opentelemetry/api';
import { shutdownTelemetry } from '@conveyor/telemetry/sdk';
const span = trace.getTracer('sdk-test').startSpan(process.env.SPAN_NAME);
console.log('SPAN ' + JSON.stringify({ traceId: span.spanContext().traceId, recording: span.isRecording() }));
span.end();
await shutdownTelemetry();
`;

let collector: Server;
let collectorUrl: string;
/** Bodies of the OTLP trace exports the collector received. */
const exported: string[] = [];

before(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') exported.push(Buffer.concat(chunks).toString('latin1'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
});

after(() => new Promise((resolve) => collector.close(resolve)));

/** Runs the script with these OTEL_* settings (and no others); returns its stdout and the exports that carry its span. */
async function endSpan(env: NodeJS.ProcessEnv): Promise<{ stdout: string; spanName: string; exports: string[] }> {
  const spanName = `span-${randomUUID()}`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--import', '@conveyor/telemetry/register', '--input-type=module', '-e', script], {
      cwd: repoRoot, env: { ...clean, ...env, SPAN_NAME: spanName }, timeout: 30_000,
    }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out)));
  });
  return { stdout, spanName, exports: exported.filter((body) => body.includes(spanName)) };
}

test('OTEL_TRACES_EXPORTER=console prints each span on stdout, and sends nothing to the OTLP endpoint', async () => {
  const run = await endSpan({ OTEL_TRACES_EXPORTER: 'console', OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl });
  assert.match(run.stdout, new RegExp(run.spanName));
  assert.equal(run.exports.length, 0);
});

test('without any exporter, spans are still recorded with real trace ids (log lines carry them)', async () => {
  for (const env of [{}, { OTEL_TRACES_EXPORTER: 'none' }]) {
    const run = await endSpan(env);
    const line = run.stdout.split('\n').find((l) => l.startsWith('SPAN '));
    assert.ok(line, `no span line in ${run.stdout}`);
    const seen = JSON.parse(line.slice('SPAN '.length)) as { traceId: string; recording: boolean };
    assert.match(seen.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(seen.traceId, '0'.repeat(32));
    assert.equal(seen.recording, true);
    assert.equal(run.exports.length, 0);
  }
});

test('OTEL_TRACES_EXPORTER=none exports nothing, even with an endpoint configured', async () => {
  const run = await endSpan({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl });
  assert.doesNotMatch(run.stdout, new RegExp(run.spanName));
  assert.equal(run.exports.length, 0);
});

test('unset, spans go over OTLP when an endpoint is configured; otlp,console does both', async () => {
  const otlp = await endSpan({ OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl });
  assert.equal(otlp.exports.length, 1);
  assert.doesNotMatch(otlp.stdout, new RegExp(otlp.spanName));
  const both = await endSpan({ OTEL_TRACES_EXPORTER: 'otlp,console', OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl });
  assert.equal(both.exports.length, 1);
  assert.match(both.stdout, new RegExp(both.spanName));
});

test('exported spans carry the resource: service name and namespace, OTEL_RESOURCE_ATTRIBUTES over the defaults, host and process', async () => {
  const { exports } = await endSpan({ OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'conveyor-sdk-test', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,service.version=9.9.9' });
  assert.equal(exports.length, 1);
  const attributes = new Map<string, unknown>(
    (JSON.parse(exports[0]!) as { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] } }[] }).resourceSpans[0]!.resource.attributes.map((a) => [a.key, a.value.stringValue]),
  );
  assert.equal(attributes.get('service.name'), 'conveyor-sdk-test');
  assert.equal(attributes.get('service.namespace'), 'conveyor');
  assert.equal(attributes.get('deployment.environment.name'), 'staging');
  assert.equal(attributes.get('service.version'), '9.9.9', 'the variable wins over the package version');
  assert.match(String(attributes.get('service.instance.id')), /^[0-9a-f-]{36}$/);
  assert.ok(attributes.has('host.name'), 'the host detector ran');
});

test('propagators and resource detectors from OTEL_PROPAGATORS and OTEL_NODE_RESOURCE_DETECTORS', () => {
  assert.deepEqual(propagatorsOf({})?.fields().sort(), ['baggage', 'traceparent', 'tracestate']);
  assert.deepEqual(propagatorsOf({ OTEL_PROPAGATORS: 'tracecontext' })?.fields().sort(), ['traceparent', 'tracestate']);
  assert.equal(propagatorsOf({ OTEL_PROPAGATORS: 'none' }), undefined);
  assert.deepEqual(propagatorsOf({ OTEL_PROPAGATORS: 'b3,baggage' })?.fields(), ['baggage'], 'an unsupported one is left out');
  assert.equal(resourceDetectors({}).length, 3);
  assert.equal(resourceDetectors({ OTEL_NODE_RESOURCE_DETECTORS: 'none' }).length, 0);
  assert.equal(resourceDetectors({ OTEL_NODE_RESOURCE_DETECTORS: 'env,gcp' }).length, 1);
  assert.equal(resourceDetectors({ OTEL_NODE_RESOURCE_DETECTORS: 'all' }).length, 5);
});

test('exporter selection: none wins, unsupported names are ignored, no endpoint means no default export', () => {
  assert.deepEqual(traceExporters({}), []);
  assert.deepEqual(traceExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), ['otlp']);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'otlp, console' }), ['otlp', 'console']);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'console,none' }), []);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'console', OTEL_SDK_DISABLED: 'true' }), []);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'zipkin,console' }), ['console']);
});

test('metric exporter selection: Prometheus unless told otherwise, both when both are named, none for none', () => {
  assert.deepEqual(metricExporters({}), ['prometheus']);
  assert.deepEqual(metricExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), ['prometheus'], 'an endpoint alone does not push metrics');
  assert.deepEqual(metricExporters({ OTEL_METRICS_EXPORTER: 'otlp' }), ['otlp']);
  assert.deepEqual(metricExporters({ OTEL_METRICS_EXPORTER: 'prometheus, otlp' }), ['prometheus', 'otlp']);
  assert.deepEqual(metricExporters({ OTEL_METRICS_EXPORTER: 'otlp,none' }), []);
  assert.deepEqual(metricExporters({ OTEL_METRICS_EXPORTER: 'console,otlp' }), ['otlp']);
});

test("OTLP protocol: the signal's own variable, then the general one, then http/json; anything else is refused", () => {
  assert.equal(otlpProtocol({}, 'traces'), 'http/json');
  assert.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'traces'), 'grpc');
  assert.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'metrics'), 'grpc');
  assert.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }, 'traces'), 'http/protobuf');
  assert.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }, 'metrics'), 'grpc');
  assert.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'grpc' }, 'metrics'), 'grpc');
  assert.throws(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }, 'traces'), (err: unknown) =>
    err instanceof TelemetryConfigError && /OTEL_EXPORTER_OTLP_PROTOCOL="thrift" is not supported \(supported: http\/json, http\/protobuf, grpc\)/.test(err.message));
  assert.throws(() => otlpProtocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'GRPC' }, 'traces'), /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="GRPC"/);
});

test('metric export interval and timeout: milliseconds, defaults 60 s and 30 s, the timeout never above the interval', () => {
  assert.deepEqual(metricExportTiming({}), { intervalMs: 60_000, timeoutMs: 30_000 });
  assert.deepEqual(metricExportTiming({ OTEL_METRIC_EXPORT_INTERVAL: '5000' }), { intervalMs: 5_000, timeoutMs: 5_000 });
  assert.deepEqual(metricExportTiming({ OTEL_METRIC_EXPORT_INTERVAL: '90000', OTEL_METRIC_EXPORT_TIMEOUT: '10000' }), { intervalMs: 90_000, timeoutMs: 10_000 });
  assert.deepEqual(metricExportTiming({ OTEL_METRIC_EXPORT_INTERVAL: 'soon' }), { intervalMs: 60_000, timeoutMs: 30_000 });
});

test('an unknown OTLP protocol stops the process at start, naming the variable and never the headers', async () => {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const secret = `token-${randomUUID()}`;
  const failure = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(process.execPath, ['--import', '@conveyor/telemetry/register', '--input-type=module', '-e', 'console.log("STARTED")'], {
      cwd: repoRoot,
      env: { ...clean, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift', OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${secret}` },
      timeout: 30_000,
    }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr: stdout + stderr }));
  });
  assert.notEqual(failure.code, 0);
  assert.doesNotMatch(failure.stderr, /STARTED/);
  assert.match(failure.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL="thrift" is not supported/);
  assert.doesNotMatch(failure.stderr, new RegExp(secret));
});

test('the loader hook wraps only what the instrumentations patch: HTTP, Postgres and Redis', () => {
  const instrumentations = createInstrumentations();
  const names = instrumentedModuleNames(instrumentations);
  for (const i of instrumentations) i.disable();
  for (const name of ['http', 'https', 'pg', 'ioredis']) assert.ok(names.includes(name), `${name} missing from ${names.join(', ')}`);
  assert.equal(new Set(names).size, names.length);
});
