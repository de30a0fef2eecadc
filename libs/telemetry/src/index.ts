// The package's public surface, by name: logging, spans and metrics through the OpenTelemetry API.
// Setting up the SDK (providers, exporters, shutdown, the Prometheus scrape) is the `./sdk` entry,
// and `./register` starts it: a process that only records loads none of it.
export { createLogger, type Logger } from './logger.js';
export { currentTraceId, inSpan, tracer } from './spans.js';
export { METRIC_NAMES, conveyorMetrics, meter } from './metrics.js';
export { inStage } from './stages.js';
export { redactUrlText, RedactingSpanProcessor, REDACTED } from './redact.js';
