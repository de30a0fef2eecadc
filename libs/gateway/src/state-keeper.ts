import type { ConnectionState } from '@conveyor/platform-kit';

/**
 * While events arrive, a resumable session's sequence number is stored at most this often: one Redis
 * write per event would cost more than the event itself. A holder killed between two writes leaves a
 * sequence number up to this old behind; the replica taking over resumes from it, the platform
 * replays the events after it once more, and their messages are dropped as duplicates by message id
 * within JetStream's duplicate window (10 minutes), so an old sequence number costs a replay, never a
 * message. A sequence number newer than what was published would lose messages, so a connection
 * only reports an event once its message was published.
 */
export const SESSION_STORE_EVERY_MS = 1_000;

/**
 * Keeps a bot's resumable session (Discord's, KOOK's, QQ's: whatever shape `S` the platform stores)
 * in the connection's fenced state, for the next connection of the bot on this replica or on the one
 * taking it over: at once when a session begins, is resumed or is
 * gone, throttled while its sequence number advances, and a last time when the connection ends.
 * Writes go out one at a time in order, so an older one never lands after a newer one.
 */
export class ConnectionStateKeeper<S> {
  private pending: S | undefined;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private lastWriteAt = 0;
  private finished: Promise<void> | undefined;

  constructor(
    private readonly state: ConnectionState<S>,
    /** A write that failed (the lease moved on, Redis unreachable); the session is then as the last write left it. */
    private readonly failed: (err: unknown) => void,
  ) {}

  /** Stores it at once: a session began or was resumed, or (null) it is gone and the next connection identifies. */
  now(session: S | null): Promise<void> {
    if (this.finished) return this.finished;
    this.cancelPending();
    return this.write(session);
  }

  /** Stores it within SESSION_STORE_EVERY_MS of the last write: its sequence number advanced. */
  soon(session: S): void {
    if (this.finished) return;
    this.pending = session;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const latest = this.pending;
      this.pending = undefined;
      if (latest) void this.write(latest);
    }, Math.max(0, this.lastWriteAt + SESSION_STORE_EVERY_MS - Date.now()));
    this.timer.unref();
  }

  /**
   * Stores the last word of this connection and stops: nothing is written after it, because the
   * next connection of the bot may be writing by then. Calling it again returns the same write.
   */
  finish(session: S | null): Promise<void> {
    if (!this.finished) {
      this.cancelPending();
      this.finished = this.write(session);
    }
    return this.finished;
  }

  private cancelPending() {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = undefined;
  }

  private write(session: S | null): Promise<void> {
    this.lastWriteAt = Date.now();
    this.writing = this.writing.then(() => (session ? this.state.put(session) : this.state.clear())).catch((err: unknown) => this.failed(err));
    return this.writing;
  }
}
