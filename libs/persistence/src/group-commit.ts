export interface GroupCommitOptions<T> {
  /** Writes one group; called with at most `maxBatch` items, never concurrently with itself. */
  write: (items: T[]) => Promise<void>;
  /** How long the first item of a group waits for others. */
  delayMs?: number;
  maxBatch?: number;
  /** Items waiting beyond this are refused (the caller's add throws), so a stalled database cannot grow memory without bound. */
  maxPending?: number;
  onError?: (err: unknown, items: T[]) => void;
  /**
   * Whether a failed write is worth trying again as it is (the database restarting, a lock conflict):
   * the whole group is written again, so `write` must be idempotent. Default: never.
   */
  retryable?: (err: unknown) => boolean;
  /** How long a group keeps being tried again before it is reported to `onError`. */
  retryForMs?: number;
  /** Told each time a group is tried again. */
  onRetry?: (err: unknown, items: T[]) => void;
  /**
   * Whether a failed write is the fault of some of its items (a value the database refuses): the group
   * is then split in halves, each written on its own, down to the items that fail alone, so one bad
   * item does not lose the others. Costs at most two writes per item of the group. Default: never.
   */
  isolatable?: (err: unknown) => boolean;
}

const RETRY_FIRST_PAUSE_MS = 100;
const RETRY_MAX_PAUSE_MS = 2_000;

export class GroupCommitFullError extends Error {}

/**
 * Group commit: writes that arrive within a few milliseconds of each other leave as one statement, so
 * Postgres pays one round trip and one WAL flush for many messages. Groups are written one at a time,
 * in arrival order. For writes whose callers wait for their own outcome, see StatementBatcher.
 */
export class GroupCommit<T> {
  private pending: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private readonly delayMs: number;
  private readonly maxBatch: number;
  private readonly maxPending: number;

  constructor(private readonly o: GroupCommitOptions<T>) {
    this.delayMs = o.delayMs ?? 2;
    this.maxBatch = o.maxBatch ?? 500;
    this.maxPending = o.maxPending ?? 50_000;
  }

  add(item: T): void {
    if (this.pending.length >= this.maxPending) throw new GroupCommitFullError(`${this.pending.length} writes waiting for the database`);
    this.pending.push(item);
    if (this.pending.length >= this.maxBatch) this.flushSoon(0);
    else this.flushSoon(this.delayMs);
  }

  /** Resolves once everything added so far is written (or failed and reported). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length) {
      const group = this.pending.splice(0, this.maxBatch);
      this.writing = this.writing.then(() => this.writeGroup(group));
    }
    await this.writing;
  }

  /**
   * Writes one group, trying it again while its failure is retryable and the bound allows, and
   * splitting it while its failure is an item's (`isolatable`). The parts of a split group share its
   * deadline.
   */
  private async writeGroup(group: T[], deadline = Date.now() + (this.o.retryForMs ?? 0)): Promise<void> {
    for (let pause = RETRY_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, RETRY_MAX_PAUSE_MS)) {
      try {
        await this.o.write(group);
        return;
      } catch (err) {
        if (group.length > 1 && this.o.isolatable?.(err)) {
          const half = Math.ceil(group.length / 2);
          await this.writeGroup(group.slice(0, half), deadline);
          await this.writeGroup(group.slice(half), deadline);
          return;
        }
        if (!this.o.retryable?.(err) || Date.now() + pause > deadline) {
          this.o.onError?.(err, group);
          return;
        }
        this.o.onRetry?.(err, group);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  private flushSoon(ms: number): void {
    if (this.timer && ms > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flush(), ms);
  }
}
