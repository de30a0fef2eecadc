import type { Redis } from 'ioredis';
import { RetryableError } from '@conveyor/bus';
import { redisKeys, type RedisKeys, type ReplyRoute } from '@conveyor/contracts';
import type { AggregationTurn, SessionLeases, SessionRef } from './leases.js';

/**
 * How long a query waiting for its session or a pipeline slot waits when no notice wakes it (a notice
 * lost while the subscriber reconnected, a lease or slot freed by expiry), jittered up to twice that.
 */
const DEFAULT_FALLBACK_RECHECK_MS = 1_000;
/**
 * How soon a query that is settling asks again. It usually settles at once: the ingress registers every
 * message right after the bus took it, and the orchestrator often sees the message a moment before
 * that registration lands; waiting out the whole settle time then cost every such message 150 ms.
 */
const SETTLING_RECHECK_MS = 5;
/**
 * An aggregation wait up to this long is waited out here; a longer one goes back to the bus with that
 * delay, so no handler is held for the seconds of a debounce.
 */
const AGGREGATION_WAIT_IN_PLACE_MS = 250;

interface Waiter {
  /** The session's lease key, as the release script publishes it. */
  session: string;
  /** Waiting for a pipeline slot rather than for its session. */
  forSlot: boolean;
  wake(): void;
}

/**
 * Wakes the queries this process holds waiting for their turn when the release script says a session
 * or a pipeline slot was freed (Redis pub/sub on `sessionFreedChannel`), so a freed slot is taken at
 * once instead of after a poll interval, and waiting costs no Redis calls. A notice wakes every waiter
 * of its session and the longest-waiting one for a slot; each replica gets every notice, so across
 * replicas a slot wakes one waiter per replica and the script decides who takes it.
 */
export class TurnWakeups {
  /** Insertion order is waiting order. Bounded by the handlers the process runs at once. */
  private readonly waiters = new Set<Waiter>();
  private readonly keys: RedisKeys;
  private readonly channel: string;
  /** Notices seen so far: a notice that came while a query asked is not missed by its wait. */
  private notices = 0;

  /**
   * `subscriber` is a connection of its own (it enters subscriber mode); closed by `close()`.
   * `fallbackRecheckMs`: how long a wait lasts without a notice (jittered up to twice that).
   */
  constructor(private readonly subscriber: Redis, prefix: string, readonly fallbackRecheckMs: number = DEFAULT_FALLBACK_RECHECK_MS) {
    this.keys = redisKeys(prefix);
    this.channel = this.keys.sessionFreedChannel();
    // The process's main connection reports Redis going away and coming back; this one reconnects on
    // its own and waits fall back to asking again meanwhile, so its errors need no line of their own.
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (channel: string, session: string) => {
      if (channel === this.channel) this.freed(session);
    });
  }

  /** Subscribes; ioredis subscribes again after every reconnection. */
  async start(): Promise<void> {
    await this.subscriber.subscribe(this.channel);
  }

  close(): void {
    for (const w of this.waiters) w.wake();
    this.subscriber.disconnect();
  }

  /** The notice count to pass to `wait` after asking, read before asking. */
  mark(): number {
    return this.notices;
  }

  /** Resolves on a notice for the session (or a slot, when `forSlot`), after `ms`, or on abort. */
  wait(s: SessionRef, forSlot: boolean, ms: number, signal: AbortSignal, since: number): Promise<void> {
    if (this.notices !== since || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      const waiter: Waiter = { session: this.keys.sessionLease(s), forSlot, wake };
      const timer = setTimeout(wake, ms);
      signal.addEventListener('abort', wake, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** Exposed for unit tests; the subscription calls it. */
  freed(session: string): void {
    this.notices++;
    let slotWaiterWoken = false;
    for (const w of [...this.waiters]) {
      if (w.session === session) w.wake();
      else if (w.forSlot && !slotWaiterWoken) {
        slotWaiterWoken = true;
        w.wake();
      }
    }
  }

  get waiting(): number {
    return this.waiters.size;
  }
}

export type Turn = { outcome: 'acquired'; merged: string[] } | { outcome: 'finished' };

/**
 * Waits until it is this query's turn in its session (and a pipeline slot is free). The wait is held
 * for at most `holdMs`, then the message goes back to the bus with a delay and keeps its place in the
 * session queue (its position is its stream sequence). A query whose reply already ended (a copy
 * redelivered because its ack was lost, or a message merged into another query) is `finished` and
 * must not run again. With aggregation the head waits out the debounce delay, then comes with the
 * envelopes (JSON) of the messages merged into it.
 */
export async function waitForTurn(
  leases: SessionLeases, wakeups: TurnWakeups, route: ReplyRoute, queryId: string, streamSeq: number, holdMs: number, signal: AbortSignal, aggregation?: AggregationTurn,
): Promise<Turn> {
  const deadline = Date.now() + holdMs;
  for (;;) {
    const since = wakeups.mark();
    const turn = await leases.acquireTurn(route, queryId, streamSeq, aggregation);
    if (turn.outcome === 'acquired') return { outcome: 'acquired', merged: turn.merged };
    if (turn.outcome === 'finished') return { outcome: 'finished' };
    if (turn.outcome === 'aggregating' && (turn.waitMs > AGGREGATION_WAIT_IN_PLACE_MS || signal.aborted)) {
      throw new RetryableError(turn.waitMs, `waiting ${turn.waitMs} ms for more messages to merge`);
    }
    if (Date.now() >= deadline || signal.aborted) throw new RetryableError(turn.outcome === 'aggregating' ? turn.waitMs : 1_000, `session busy (${turn.outcome})`);
    if (turn.outcome === 'aggregating' || turn.outcome === 'settling') {
      const wait = turn.outcome === 'aggregating' ? turn.waitMs : SETTLING_RECHECK_MS;
      await new Promise((r) => setTimeout(r, wait));
    } else {
      const fallback = Math.min(wakeups.fallbackRecheckMs * (1 + Math.random()), Math.max(0, deadline - Date.now()));
      await wakeups.wait(route, turn.outcome === 'pipeline-full', fallback, signal, since);
    }
  }
}
