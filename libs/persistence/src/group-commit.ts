export interface GroupCommitOptions<T> {
  /** Writes one group; called with at most `maxBatch` items, never concurrently with itself. */
  write: (items: T[]) => Promise<void>;
  /** How long the first item of a group waits for others. */
  delayMs?: number;
  maxBatch?: number;
  /** Items waiting beyond this are refused (the caller's add throws), so a stalled database cannot grow memory without bound. */
  maxPending?: number;
  onError?: (err: unknown, items: T[]) => void;
}

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
      this.writing = this.writing.then(() => this.o.write(group).catch((err) => this.o.onError?.(err, group)));
    }
    await this.writing;
  }

  private flushSoon(ms: number): void {
    if (this.timer && ms > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flush(), ms);
  }
}
