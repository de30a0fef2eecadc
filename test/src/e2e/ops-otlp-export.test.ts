import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testServerUrl } from '@conveyor/persistence/testing';
import { startOtlpGrpcReceiver, startOtlpReceiver, type OtlpGrpcReceiver, type OtlpReceiver } from '../fakes/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// A process started the way the services are (telemetry preloaded): one span, one counter, then the
// shutdown a stopping service does, which flushes the spans and pushes the last metrics.
const script = `
import { trace, metrics } from '@opentelemetry/api';
import { shutdownTelemetry } from '@conveyor/telemetry/sdk';
const name = process.env.PROBE_NAME;
trace.getTracer('otlp-export-test').startSpan(name, { attributes: { 'probe.kind': 'span' } }).end();
metrics.getMeter('otlp-export-test').createCounter(name).add(3, { 'probe.kind': 'counter' });
await shutdownTelemetry();
console.log('DONE');
`;

// The auto-instrumented clients as the services import them (ES modules): one Redis command, one SQL
// statement and one outgoing HTTP request inside the probe's span.
const clientsScript = `
import http from 'node:http';
import { trace } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import pg from 'pg';
import { shutdownTelemetry } from '@conveyor/telemetry/sdk';
await trace.getTracer('otlp-export-test').startActiveSpan(process.env.PROBE_NAME, async (span) => {
  const redis = new Redis(process.env.PROBE_REDIS_URL);
  await redis.ping();
  redis.disconnect();
  const client = new pg.Client({ connectionString: process.env.PROBE_DATABASE_URL });
  await client.connect();
  await client.query('SELECT 1');
  await client.end();
  await new Promise((resolve, reject) => http.get(process.env.PROBE_HTTP_URL, (res) => res.resume().on('end', resolve)).on('error', reject));
  span.end();
});
await shutdownTelemetry();
console.log('DONE');
`;

/** Runs the script with these OTEL_* settings (and no others); resolves with its output once it has ended. */
function runProbe(env: NodeJS.ProcessEnv, source = script): Promise<{ name: string; output: string }> {
  const name = `probe_${randomUUID().replace(/-/g, '')}`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', '@conveyor/telemetry/register', '--input-type=module', '-e', source], {
      cwd: repoRoot, env: { ...clean, OTEL_SERVICE_NAME: 'conveyor-otlp-probe', ...env, PROBE_NAME: name }, timeout: 60_000,
    }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve({ name, output: stdout + stderr })));
  });
}

describe('OTLP export of traces and metrics (OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL)', () => {
  let http: OtlpReceiver;
  let grpc: OtlpGrpcReceiver;

  before(async () => {
    http = await startOtlpReceiver();
    grpc = await startOtlpGrpcReceiver();
  });
  after(async () => {
    await http?.close();
    await grpc?.close();
  });

  test('OTEL_METRICS_EXPORTER=otlp pushes metrics over OTLP/HTTP to the endpoint, traces going the same way', async () => {
    const probe = await runProbe({ OTEL_EXPORTER_OTLP_ENDPOINT: http.url, OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '1000' });
    const points = await http.waitForMetrics((all) => all.some((p) => p.name === probe.name), 30_000);
    const point = points.find((p) => p.name === probe.name)!;
    assert.equal(point.type, 'sum');
    assert.equal(point.value, 3);
    assert.equal(point.attributes['probe.kind'], 'counter');
    assert.equal(point.serviceName, 'conveyor-otlp-probe');
    await http.waitFor((all) => all.some((s) => s.name === probe.name), 30_000);
    assert.equal(grpc.metrics.some((p) => p.name === probe.name), false);
  });

  test('Redis, Postgres and outgoing HTTP imported as ES modules are traced: a child span of each under the caller', async () => {
    const probe = await runProbe({
      OTEL_EXPORTER_OTLP_ENDPOINT: http.url,
      PROBE_REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      PROBE_DATABASE_URL: testServerUrl(),
      PROBE_HTTP_URL: `${http.url}/probe`,
    }, clientsScript);
    const spans = await http.waitFor((all) => all.some((s) => s.name === probe.name), 30_000);
    const parent = spans.find((s) => s.name === probe.name)!;
    const children = spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
    const scopes = (fragment: string) => children.filter((s) => s.scopeName?.includes(fragment));
    assert.ok(scopes('instrumentation-ioredis').some((s) => s.name === 'ping'), `no Redis span under the probe: ${children.map((s) => `${s.scopeName} ${s.name}`).join(', ')}`);
    assert.ok(scopes('instrumentation-pg').some((s) => s.name.startsWith('pg.query')), `no Postgres span under the probe: ${children.map((s) => s.name).join(', ')}`);
    assert.ok(scopes('instrumentation-http').some((s) => s.kindName === 'CLIENT' && (s.attributes['http.request.method'] ?? s.attributes['http.method']) === 'GET'), `no HTTP client span under the probe: ${children.map((s) => s.name).join(', ')}`);
  });

  test('the metrics endpoint of their own (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) wins over the shared one', async () => {
    const probe = await runProbe({
      OTEL_METRICS_EXPORTER: 'prometheus,otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${http.url}/v1/metrics`,
      OTEL_TRACES_EXPORTER: 'none',
    });
    await http.waitForMetrics((all) => all.some((p) => p.name === probe.name), 30_000);
  });

  test('without OTEL_METRICS_EXPORTER metrics stay on /metrics only: nothing is pushed', async () => {
    const probe = await runProbe({ OTEL_EXPORTER_OTLP_ENDPOINT: http.url });
    // The span arriving shows the process exported what it exports; the counter was never pushed.
    await http.waitFor((all) => all.some((s) => s.name === probe.name), 30_000);
    assert.equal(http.metrics.some((p) => p.name === probe.name), false);
  });

  test('OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends traces and metrics to a gRPC collector, with the configured headers', async () => {
    const token = `probe-token-${randomUUID()}`;
    const probe = await runProbe({
      OTEL_EXPORTER_OTLP_ENDPOINT: grpc.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${token}`,
      OTEL_METRICS_EXPORTER: 'otlp',
    });
    const spans = await grpc.waitFor((all) => all.some((s) => s.name === probe.name), 30_000);
    const span = spans.find((s) => s.name === probe.name)!;
    assert.match(span.traceId, /^[0-9a-f]{32}$/);
    assert.equal(span.attributes['probe.kind'], 'span');
    assert.equal(span.serviceName, 'conveyor-otlp-probe');
    const points = await grpc.waitForMetrics((all) => all.some((p) => p.name === probe.name), 30_000);
    assert.equal(points.find((p) => p.name === probe.name)?.value, 3);
    assert.ok(grpc.calls.some((c) => c.service === 'traces' && c.metadata.authorization === `Bearer ${token}`), 'the headers reach the collector');
    assert.ok(grpc.calls.some((c) => c.service === 'metrics'));
    assert.doesNotMatch(probe.output, new RegExp(token), 'the token is never printed');
    assert.equal(http.spans.some((s) => s.name === probe.name), false);
  });

  test('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc moves traces only: metrics stay on OTLP/HTTP JSON', async () => {
    const probe = await runProbe({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: grpc.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${http.url}/v1/metrics`,
      OTEL_METRICS_EXPORTER: 'otlp',
    });
    await grpc.waitFor((all) => all.some((s) => s.name === probe.name), 30_000);
    await http.waitForMetrics((all) => all.some((p) => p.name === probe.name), 30_000);
  });
});
