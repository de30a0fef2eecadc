import { createServer } from 'node:http';
import { gunzipSync, inflateSync } from 'node:zlib';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/**
 * An OTLP/HTTP JSON trace and metrics endpoint. `@opentelemetry/exporter-trace-otlp-http` posts
 * `resourceSpans[].scopeSpans[].spans[]` with hex trace/span ids, string nanosecond times and
 * numeric span kinds; ids in base64 (the canonical proto3 JSON mapping some exporters use) are
 * converted to hex as well. `@opentelemetry/exporter-metrics-otlp-http` posts
 * `resourceMetrics[].scopeMetrics[].metrics[]`, kept as one ReceivedMetricPoint per data point.
 */

export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [k: string]: AttributeValue };

export const SPAN_KIND_NAMES = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'] as const;
export type SpanKindName = (typeof SPAN_KIND_NAMES)[number];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Undefined for a root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP enum value: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  kindName: SpanKindName;
  serviceName?: string;
  scopeName?: string;
  attributes: Record<string, AttributeValue>;
  resourceAttributes: Record<string, AttributeValue>;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  status: { code: number; message?: string };
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, AttributeValue> }[];
}

/** One data point of an exported metric (sum, gauge or histogram). */
export interface ReceivedMetricPoint {
  name: string;
  unit?: string;
  type: 'sum' | 'gauge' | 'histogram';
  serviceName?: string;
  scopeName?: string;
  attributes: Record<string, AttributeValue>;
  /** Sums and gauges. */
  value?: number;
  /** Histograms. */
  count?: number;
  sum?: number;
}

export interface OtlpReceiver {
  /** Base URL; exporters post to `${url}/v1/traces` and `${url}/v1/metrics`. */
  url: string;
  spans: ReceivedSpan[];
  metrics: ReceivedMetricPoint[];
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  waitForMetrics(predicate: (points: ReceivedMetricPoint[]) => boolean, timeoutMs?: number): Promise<ReceivedMetricPoint[]>;
  close(): Promise<void>;
}

interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}
interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number | string;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: string;
}

function flattenValue(v: OtlpAnyValue | undefined): AttributeValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  // Proto3 JSON allows int64 as a string; spans in tests never need more than 2^53.
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(flattenValue);
  if (v.kvlistValue) return flattenAttributes(v.kvlistValue.values);
  if (v.bytesValue !== undefined) return v.bytesValue;
  return null;
}

function flattenAttributes(list: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list ?? []) out[kv.key] = flattenValue(kv.value);
  return out;
}

/** Hex ids pass through (lowercased); anything else is read as base64. Empty means absent. */
function normalizeId(id: unknown, hexLength: number): string | undefined {
  if (typeof id !== 'string' || id === '') return undefined;
  if (id.length === hexLength && /^[0-9a-fA-F]+$/.test(id)) return id.toLowerCase();
  const hex = Buffer.from(id, 'base64').toString('hex');
  return /^0*$/.test(hex) ? undefined : hex;
}

function kindOf(kind: unknown): number {
  if (typeof kind === 'number') return kind;
  if (typeof kind === 'string') {
    const i = SPAN_KIND_NAMES.indexOf(kind.replace(/^SPAN_KIND_/, '') as SpanKindName);
    return i < 0 ? 0 : i;
  }
  return 0;
}

const STATUS_CODES = ['STATUS_CODE_UNSET', 'STATUS_CODE_OK', 'STATUS_CODE_ERROR'];

function statusCodeOf(code: unknown): number {
  if (typeof code === 'number') return code;
  return typeof code === 'string' ? Math.max(0, STATUS_CODES.indexOf(code)) : 0;
}

export function flattenTraces(payload: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of payload?.resourceSpans ?? []) {
    const resourceAttributes = flattenAttributes(rs.resource?.attributes);
    const serviceName = resourceAttributes['service.name'];
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const kind = kindOf(s.kind);
        const span: ReceivedSpan = {
          traceId: normalizeId(s.traceId, 32) ?? '',
          spanId: normalizeId(s.spanId, 16) ?? '',
          name: s.name ?? '',
          kind,
          kindName: SPAN_KIND_NAMES[kind] ?? 'UNSPECIFIED',
          attributes: flattenAttributes(s.attributes),
          resourceAttributes,
          status: { code: statusCodeOf(s.status?.code), ...(s.status?.message ? { message: s.status.message } : {}) },
          events: (s.events ?? []).map((e: { name?: string; attributes?: OtlpKeyValue[] }) => ({
            name: e.name ?? '',
            attributes: flattenAttributes(e.attributes),
          })),
          links: (s.links ?? []).map((l: { traceId?: string; spanId?: string; attributes?: OtlpKeyValue[] }) => ({
            traceId: normalizeId(l.traceId, 32) ?? '',
            spanId: normalizeId(l.spanId, 16) ?? '',
            attributes: flattenAttributes(l.attributes),
          })),
        };
        const parent = normalizeId(s.parentSpanId, 16);
        if (parent) span.parentSpanId = parent;
        if (typeof serviceName === 'string') span.serviceName = serviceName;
        if (ss.scope?.name) span.scopeName = ss.scope.name;
        if (s.startTimeUnixNano !== undefined) span.startTimeUnixNano = String(s.startTimeUnixNano);
        if (s.endTimeUnixNano !== undefined) span.endTimeUnixNano = String(s.endTimeUnixNano);
        out.push(span);
      }
    }
  }
  return out;
}

/** The data points of an OTLP metrics export (JSON mapping, or a protobuf request read with string longs and enums). */
export function flattenMetrics(payload: any): ReceivedMetricPoint[] {
  const out: ReceivedMetricPoint[] = [];
  for (const rm of payload?.resourceMetrics ?? []) {
    const serviceName = flattenAttributes(rm.resource?.attributes)['service.name'];
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const type = m.histogram ? 'histogram' : m.sum ? 'sum' : m.gauge ? 'gauge' : undefined;
        if (!type) continue;
        for (const p of m[type].dataPoints ?? []) {
          const point: ReceivedMetricPoint = { name: m.name ?? '', type, attributes: flattenAttributes(p.attributes) };
          if (m.unit) point.unit = m.unit;
          if (typeof serviceName === 'string') point.serviceName = serviceName;
          if (sm.scope?.name) point.scopeName = sm.scope.name;
          if (type === 'histogram') {
            point.count = Number(p.count ?? 0);
            if (p.sum !== undefined) point.sum = Number(p.sum);
          } else {
            point.value = Number(p.asDouble ?? p.asInt ?? 0);
          }
          out.push(point);
        }
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(options: { port?: number; host?: string } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetricPoint[] = [];
  const waiters = new Waiters(() => spans, 'spans');
  const metricWaiters = new Waiters(() => metrics, 'metric points');

  const reply = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };

  const server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    let raw: Buffer;
    try {
      raw = await readBody(req);
    } catch (err) {
      return reply(res, 400, { code: 3, message: String(err) });
    }
    if (req.method !== 'POST' || !['/v1/traces', '/v1/metrics', '/v1/logs'].includes(path)) {
      return reply(res, 404, { code: 5, message: `no OTLP endpoint at ${req.method} ${path}` });
    }
    if (contentType.includes('protobuf')) {
      return reply(res, 415, {
        code: 3,
        message: 'this test receiver accepts OTLP/HTTP JSON only; use @opentelemetry/exporter-trace-otlp-http, not -proto',
      });
    }
    // Logs are accepted so a shared OTLP base URL does not make exporters log errors.
    if (path === '/v1/logs') return reply(res, 200, {});
    try {
      const encoding = (req.headers['content-encoding'] ?? '').toLowerCase();
      const bytes = encoding === 'gzip' ? gunzipSync(raw) : encoding === 'deflate' ? inflateSync(raw) : raw;
      const body = JSON.parse(bytes.toString('utf8'));
      if (path === '/v1/traces') spans.push(...flattenTraces(body));
      else metrics.push(...flattenMetrics(body));
    } catch (err) {
      return reply(res, 400, { code: 3, message: `invalid OTLP JSON: ${String(err)}` });
    }
    reply(res, 200, {});
    if (path === '/v1/traces') waiters.notify();
    else metricWaiters.notify();
  });

  const url = await listen(server, options.port, options.host);
  return {
    url,
    spans,
    metrics,
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForMetrics: (predicate, timeoutMs) => metricWaiters.waitFor(predicate, timeoutMs),
    close: () => closeServer(server),
  };
}
