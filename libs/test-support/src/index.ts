// Helpers for tests against the real NATS, Redis and OpenTelemetry API, shared by every package's
// tests and the multi-process suites. No production package depends on this one.
export { NATS_URL, randomPrefix, streamMessages, testBus, type TestBus } from './bus.js';
export { deleteKeys, REDIS_URL, useTestRedis, type TestRedis } from './redis.js';
export { sleep, waitFor } from './wait.js';
export { memoryLogger, type MemoryLine } from './logger.js';
export { installTestTracing } from './tracing.js';
