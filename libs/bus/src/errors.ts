import { JetStreamApiError } from '@nats-io/jetstream';

/**
 * Errors a consumer handler throws to steer what happens to its message, and errors the bus throws
 * at producers.
 */

// The handler's verdicts live in the contracts, so libraries that only decide (the pipeline's stages)
// can throw them without depending on the bus.
export { PermanentError, RetryableError } from '@conveyor/contracts';

/** A producer tried to publish a payload its own schema rejects: a bug, nothing was sent. */
export class PayloadValidationError extends Error {
  override readonly name = 'PayloadValidationError';
  constructor(
    readonly subject: string,
    readonly issues: string,
  ) {
    super(`payload for ${subject} failed validation: ${issues}`);
  }
}

/** The encoded payload is larger than LIMITS.busPayloadBytes: nothing was sent. */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
  constructor(
    readonly subject: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`payload for ${subject} is ${bytes} bytes, above the bus limit of ${limit}`);
  }
}

/** JetStream API codes of a stream refusing a message because it is full (`discard: new`). */
const STREAM_FULL_CODES = new Set([
  10077, // store failed: maximum messages or bytes exceeded
  10023, // insufficient resources
]);
/**
 * JetStream API codes of a cluster that cannot serve the request for the moment: a stream or the
 * meta group electing a leader after a node was lost.
 */
const CLUSTER_UNAVAILABLE_CODES = new Set([
  10008, // JetStream system temporarily unavailable
  10009, // JetStream cluster can not handle request (no leader yet)
]);
/**
 * The broker did not take a publish in time, or JetStream did not answer at all: no server answered
 * the stream's subject (the client reports that as JetStream not enabled), which is also what a
 * clustered stream looks like while it elects a new leader.
 */
const BROKER_UNAVAILABLE_NAMES = new Set(['TimeoutError', 'NoRespondersError', 'JetStreamNotEnabled']);
/** JetStream API codes of a stream whose replicas cannot be placed: fewer JetStream servers than replicas. */
const REPLICA_PLACEMENT_CODES = new Set([
  10005, // no suitable peers for placement
  10074, // replicas > 1 not supported in non-clustered mode
]);

/**
 * Whether `err` or an error in its `cause` chain (five deep at most) passes `test`: errors are told
 * apart by their names and codes, and clients wrap them.
 */
export function someCause(err: unknown, test: (e: { name?: unknown; code?: unknown }) => boolean): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (test(e as { name?: unknown; code?: unknown })) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether a publish failed because no broker took it for now (no answer, no stream leader): trying
 * again with the same de-duplication id shortly is safe and likely to succeed. A full stream is not
 * this: it stays full until consumers catch up.
 */
export function isBrokerUnavailable(err: unknown): boolean {
  return someCause(err, (e) =>
    (e instanceof JetStreamApiError && CLUSTER_UNAVAILABLE_CODES.has(e.code)) || (typeof e.name === 'string' && BROKER_UNAVAILABLE_NAMES.has(e.name)));
}

/**
 * Whether a publish failed because the bus cannot take the message now (a full stream, or a broker
 * that does not answer): the producer should tell its caller to come back later. Classified by the
 * broker's error code and the client's error names.
 */
export function isBusBackpressure(err: unknown): boolean {
  return someCause(err, (e) => e instanceof JetStreamApiError && STREAM_FULL_CODES.has(e.code)) || isBrokerUnavailable(err);
}

/** Whether JetStream refused a stream because it cannot place that many replicas. */
export function isReplicaPlacementError(err: unknown): boolean {
  return someCause(err, (e) => e instanceof JetStreamApiError && REPLICA_PLACEMENT_CODES.has(e.code));
}

/** Whether the server refused the connection's user a subject (NATS permissions are allow lists). */
export function isPermissionViolation(err: unknown): boolean {
  return someCause(err, (e) => e.name === 'PermissionViolationError');
}

/**
 * A stream that is missing or differs from its spec while this connection's user may not create or
 * update streams: in a deployment only the admin service may, and the others wait for it.
 */
export class StreamNotProvisionedError extends Error {
  constructor(readonly stream: string, readonly drift: readonly string[], options?: ErrorOptions) {
    super(
      `stream ${stream} is ${drift.length ? `different from its spec in ${drift.join(', ')}` : 'missing'} and this NATS user may not ` +
        'create or update streams: the admin service provisions them (start it, or give this user $JS.API.STREAM.CREATE/UPDATE)',
      options,
    );
    this.name = 'StreamNotProvisionedError';
  }
}
