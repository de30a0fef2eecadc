// The per-message state machine's public surface: what the services wire. Script files, key
// arguments and result codes stay inside the package.
export {
  SessionLeases, DEFAULT_LEASE_OPTIONS,
  type SessionRef, type AcquireOutcome, type AggregationTurn, type TurnResult, type LeaseOptions, type RateWindowRequest, type AdmittedRate,
} from './session-leases.js';
export { TurnWakeups, waitForTurn, throttledHolderCheck, type TurnAsk, type Turn, type TurnOptions, type HolderCheck, type WaitReason } from './session-turn.js';
export { QueryTurns, type QueryTurnRequest, type QueryTurnOutcome, type QueryTurnOptions, type TurnControl, type TurnEnd } from './query-turn.js';
export { RedisFixedWindow, TurnRateWindow, type RateDecision } from './rate-window.js';
export { RunAttempts } from './run-attempts.js';
export {
  ReplyQueue, nextCallbackSequence,
  type EnqueueOutcome, type CommitOutcome, type CommitResult, type TakenBatch, type TakeResult, type TakeOptions, type DeliverResult, type ShownState, type CallbackNumbering,
} from './reply-queue.js';
export type { QueuedPart, BatchEntry } from './reply-parts.js';
export { StreamedFlag } from './streamed-flag.js';
export { ReplyTurns } from './reply-turn.js';
export { ScriptResultError } from './results.js';
export type { PublishPort } from './publish-port.js';
export { RunEvents, EVENT_PUBLISH_RETRY_MS, type RunEventsDeps, type EventSource, type EventNumber } from './run-events.js';
export { QueryIntake, INTAKE_UNAVAILABLE_RETRY_MS, type InboundQueryMessage, type IntakeResult, type QueryIntakeDeps } from './query-intake.js';
export { PluginCallStats, type PluginCallSample, type PluginCallSummary } from './plugin-call-stats.js';
