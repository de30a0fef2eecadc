export * from './logger.js';
export * from './spans.js';
export * from './metrics.js';
export * from './stages.js';
export { redactUrlText, RedactingSpanProcessor, REDACTED } from './redact.js';
export { prometheusExporter, startTelemetry, shutdownTelemetry, serviceVersion } from './sdk.js';
