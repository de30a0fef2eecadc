// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { createLogger, type Logger } from './logger.js';
export { currentTraceId, inSpan, tracer } from './spans.js';
export { METRIC_NAMES, conveyorMetrics, meter } from './metrics.js';
export { inStage } from './stages.js';
export { redactUrlText, RedactingSpanProcessor, REDACTED } from './redact.js';
export { prometheusExporter, startTelemetry, shutdownTelemetry, serviceVersion } from './sdk.js';
