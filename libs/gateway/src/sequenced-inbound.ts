/** Inbound messages of one connection waiting to be published; past this a burst is refused, not buffered without bound. */
export const MAX_QUEUED_INBOUND = 1_000;

export interface SequencedInboundOptions {
  /**
   * Every event up to this sequence number is handled (its message published, or it carried none):
   * a resumed session may start after it. Called in rising order.
   */
  onHandled: (seq: number) => void;
  /** A publish that failed; the message is lost to this connection (the platform's redelivery or a replay may bring it back). */
  onFailed: (err: unknown) => void;
  maxQueued?: number;
}

/**
 * Publishes the messages of a connection whose events carry sequence numbers (KOOK's `sn`, QQ's
 * `s`) one at a time in arrival order, and reports up to which sequence number everything was
 * handled, so what a resumable session stores never runs ahead of what was published. Events that
 * carry no message count as handled once nothing before them waits.
 */
export class SequencedInbound {
  private queued = 0;
  private chain: Promise<void> = Promise.resolve();
  private latest: number | null = null;
  private reported: number | null = null;

  constructor(private readonly o: SequencedInboundOptions) {}

  /** How many messages wait to be published. */
  get waiting(): number {
    return this.queued;
  }

  /** An event that is no message to publish. */
  skip(seq: number): void {
    this.latest = seq;
    if (this.queued === 0) this.handled(seq);
  }

  /** Queues a message's publish; false (nothing queued) when too many wait. */
  push(seq: number, publish: () => Promise<void>): boolean {
    if (this.queued >= (this.o.maxQueued ?? MAX_QUEUED_INBOUND)) return false;
    this.latest = seq;
    this.queued++;
    this.chain = this.chain
      .then(publish)
      .catch((err: unknown) => this.o.onFailed(err))
      .finally(() => {
        this.queued--;
        // Messages are published in order: with none waiting, every event seen so far is handled.
        this.handled(this.queued === 0 && this.latest !== null ? this.latest : seq);
      });
    return true;
  }

  /** Resolves once everything queued so far was published (or failed). */
  drained(): Promise<void> {
    return this.chain;
  }

  /** The session begins anew: sequence numbers start over. */
  reset(): void {
    this.latest = null;
    this.reported = null;
  }

  private handled(seq: number) {
    if (this.reported !== null && seq <= this.reported) return;
    this.reported = seq;
    this.o.onHandled(seq);
  }
}
