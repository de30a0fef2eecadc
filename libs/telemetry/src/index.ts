export * from './logger.js';
export * from './spans.js';
export * from './metrics.js';
export { prometheusExporter, startTelemetry, shutdownTelemetry } from './sdk.js';
