/**
 * What a message handler throws to steer what happens to its message. The consume loop (the bus)
 * acts on them; anything that decides (a pipeline stage, a session's turn) may throw them without
 * knowing the bus.
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
