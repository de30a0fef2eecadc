/** Moved to @conveyor/delivery (shared with the benchmark and tests); re-exported for existing imports. */
export { SessionSequence } from '@conveyor/delivery';
