import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { traceExporters } from './sdk.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// A process started the way services are (telemetry preloaded) that ends one span and shuts down.
const script = `
import { trace } from '@opentelemetry/api';
import { shutdownTelemetry } from '@conveyor/telemetry';
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

test('exporter selection: none wins, unsupported names are ignored, no endpoint means no default export', () => {
  assert.deepEqual(traceExporters({}), []);
  assert.deepEqual(traceExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), ['otlp']);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'otlp, console' }), ['otlp', 'console']);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'console,none' }), []);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'console', OTEL_SDK_DISABLED: 'true' }), []);
  assert.deepEqual(traceExporters({ OTEL_TRACES_EXPORTER: 'zipkin,console' }), ['console']);
});
