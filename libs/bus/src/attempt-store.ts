import type { Link, SpanContext } from '@opentelemetry/api';

/**
 * Where a consumer keeps the span context of each delivery attempt, so the next delivery of the same
 * stream message can link its CONSUMER span to the earlier attempt. Keys are `<stream>:<durable>:<seq>`.
 */
export interface AttemptStore {
  /** Records the running attempt; fire and forget, it must not slow the handler down. */
  remember(key: string, span: SpanContext): void;
  /** The earlier attempt, if known; only asked on redelivery. */
  recall(key: string): Promise<SpanContext | undefined>;
  /** The message is done: nothing will be redelivered. */
  forget(key: string): void;
}

/**
 * Attempts seen by this process. Enough when the earlier attempt ran here (a nak and retry); a
 * replica that died takes its memory along, which a shared store (see service-kit) covers.
 */
export class MemoryAttemptStore implements AttemptStore {
  private readonly attempts = new Map<string, SpanContext>();

  constructor(private readonly maxEntries = 10_000) {}

  remember(key: string, span: SpanContext): void {
    this.attempts.delete(key);
    this.attempts.set(key, span);
    if (this.attempts.size > this.maxEntries) this.attempts.delete(this.attempts.keys().next().value!);
  }

  async recall(key: string): Promise<SpanContext | undefined> {
    return this.attempts.get(key);
  }

  forget(key: string): void {
    this.attempts.delete(key);
  }
}

/**
 * Keeps nothing: for a consumer whose handler links a redelivered message to its earlier attempt
 * itself, where it already keeps per-attempt state (the runner, as it numbers its attempts).
 */
export const NO_ATTEMPT_STORE: AttemptStore = {
  remember: () => {},
  recall: async () => undefined,
  forget: () => {},
};

/** The link from a redelivered message's span to its earlier attempt's. */
export function previousAttemptLink(context: SpanContext): Link {
  return { context, attributes: { 'conveyor.link.type': 'previous_attempt' } };
}
