import { metrics } from '@opentelemetry/api';

/** One meter for the whole system; metric names are part of the operations contract (docs/OPERATIONS.md). */
export const meter = metrics.getMeter('@conveyor');
