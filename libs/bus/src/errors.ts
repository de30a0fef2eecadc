/**
 * Errors a consumer handler throws to steer what happens to its message, and errors the bus throws
 * at producers.
 */

/** Try again later: the message is nak'ed with this delay (until max_deliver, then dead-lettered). */
export class RetryableError extends Error {
  override readonly name = 'RetryableError';
  constructor(
    readonly delayMs: number,
    message = `retry in ${delayMs} ms`,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** This message can never succeed: it goes to the dead letters at once (reason `handler_rejected`). */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

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
