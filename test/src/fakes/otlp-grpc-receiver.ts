import { Server, ServerCredentials, status, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { Waiters } from './http-util.js';
import { flattenMetrics, flattenTraces, type ReceivedMetricPoint, type ReceivedSpan } from './otlp-receiver.js';

/**
 * An OTLP/gRPC collector: a real gRPC server with the collector's TraceService and MetricsService
 * `Export` RPCs, as `@opentelemetry/exporter-trace-otlp-grpc` and `-metrics-otlp-grpc` call them. The
 * requests are read with the subset of the opentelemetry-proto messages below (field numbers as
 * upstream; fields the exporters send that are not listed are skipped), into the same shapes as the
 * OTLP/HTTP receiver's.
 */

const OTLP_PROTO = `
syntax = "proto3";
package opentelemetry.proto;

message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }

message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; fixed32 flags = 16;
  string name = 5;
  enum SpanKind { SPAN_KIND_UNSPECIFIED = 0; SPAN_KIND_INTERNAL = 1; SPAN_KIND_SERVER = 2; SPAN_KIND_CLIENT = 3; SPAN_KIND_PRODUCER = 4; SPAN_KIND_CONSUMER = 5; }
  SpanKind kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
  repeated Event events = 11; uint32 dropped_events_count = 12;
  message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; uint32 dropped_attributes_count = 5; fixed32 flags = 6; }
  repeated Link links = 13; uint32 dropped_links_count = 14;
  Status status = 15;
}
message Status {
  string message = 2;
  enum StatusCode { STATUS_CODE_UNSET = 0; STATUS_CODE_OK = 1; STATUS_CODE_ERROR = 2; }
  StatusCode code = 3;
}

message ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
message ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; string schema_url = 3; }
message ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; string schema_url = 3; }
message Metric {
  string name = 1; string description = 2; string unit = 3;
  oneof data { Gauge gauge = 5; Sum sum = 7; Histogram histogram = 9; }
}
enum AggregationTemporality { AGGREGATION_TEMPORALITY_UNSPECIFIED = 0; AGGREGATION_TEMPORALITY_DELTA = 1; AGGREGATION_TEMPORALITY_CUMULATIVE = 2; }
message Gauge { repeated NumberDataPoint data_points = 1; }
message Sum { repeated NumberDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2; bool is_monotonic = 3; }
message Histogram { repeated HistogramDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2; }
message NumberDataPoint {
  repeated KeyValue attributes = 7; fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3;
  oneof value { double as_double = 4; sfixed64 as_int = 6; }
  uint32 flags = 8;
}
message HistogramDataPoint {
  repeated KeyValue attributes = 9; fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3;
  fixed64 count = 4; optional double sum = 5; repeated fixed64 bucket_counts = 6; repeated double explicit_bounds = 7;
  uint32 flags = 10; optional double min = 11; optional double max = 12;
}
`;

const root = protobuf.parse(OTLP_PROTO).root;
const TraceRequest = root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');
const MetricsRequest = root.lookupType('opentelemetry.proto.ExportMetricsServiceRequest');

/** Proto3 JSON-like objects: camelCase fields, int64 as strings, enums by name, bytes as base64 (what flattenTraces reads). */
function decode(type: protobuf.Type, bytes: Buffer): unknown {
  return type.toObject(type.decode(bytes), { longs: String, enums: String, bytes: String, arrays: true });
}

/** One unary `Export` RPC: raw bytes in (decoded by the handler), an empty response message out (no partial success). */
function exportService(service: string): ServiceDefinition {
  return {
    Export: {
      path: `/opentelemetry.proto.collector.${service}/Export`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: (b: Buffer) => b,
    },
  };
}

export interface OtlpGrpcReceiver {
  /** `http://127.0.0.1:<port>`: OTEL_EXPORTER_OTLP_ENDPOINT for the gRPC exporters (plain text). */
  url: string;
  spans: ReceivedSpan[];
  metrics: ReceivedMetricPoint[];
  /** Metadata of every Export call, for asserting headers (OTEL_EXPORTER_OTLP_HEADERS) arrive. */
  calls: { service: 'traces' | 'metrics'; metadata: Record<string, string> }[];
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  waitForMetrics(predicate: (points: ReceivedMetricPoint[]) => boolean, timeoutMs?: number): Promise<ReceivedMetricPoint[]>;
  close(): Promise<void>;
}

export async function startOtlpGrpcReceiver(options: { port?: number; host?: string } = {}): Promise<OtlpGrpcReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetricPoint[] = [];
  const calls: OtlpGrpcReceiver['calls'] = [];
  const spanWaiters = new Waiters(() => spans, 'spans');
  const metricWaiters = new Waiters(() => metrics, 'metric points');

  const handler = (kind: 'traces' | 'metrics'): UntypedServiceImplementation => ({
    Export: (call: { request: Buffer; metadata: { getMap(): Record<string, unknown> } }, callback: (err: { code: number; details: string } | null, value?: Buffer) => void) => {
      const metadata = Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)]));
      calls.push({ service: kind, metadata });
      try {
        if (kind === 'traces') spans.push(...flattenTraces(decode(TraceRequest, call.request)));
        else metrics.push(...flattenMetrics(decode(MetricsRequest, call.request)));
      } catch (err) {
        callback({ code: status.INVALID_ARGUMENT, details: `unreadable OTLP request: ${String(err)}` });
        return;
      }
      callback(null, Buffer.alloc(0));
      if (kind === 'traces') spanWaiters.notify();
      else metricWaiters.notify();
    },
  });

  const server = new Server();
  server.addService(exportService('trace.v1.TraceService'), handler('traces'));
  server.addService(exportService('metrics.v1.MetricsService'), handler('metrics'));
  const host = options.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${options.port ?? 0}`, ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  return {
    url: `http://${host}:${port}`,
    spans,
    metrics,
    calls,
    waitFor: (predicate, timeoutMs) => spanWaiters.waitFor(predicate, timeoutMs),
    waitForMetrics: (predicate, timeoutMs) => metricWaiters.waitFor(predicate, timeoutMs),
    // Exporters keep their channel open; the fake drops it rather than waiting for them.
    close: async () => server.forceShutdown(),
  };
}
