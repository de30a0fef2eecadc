import { LRUCache } from 'lru-cache';
import { DEFAULT_KEY_LAYOUT, redisKeys, RetryableError, type RedisKeyLayout, type RedisKeys, type ReplyRoute } from '@conveyor/contracts';
import type { AdmittedRate, AggregationTurn, RateWindowRequest, SessionLeases, SessionRef } from './session-leases.js';
import type { RedisClient } from '@conveyor/redis-scripts';

/**
 * How long a query waiting for its session or a pipeline slot waits when no notice wakes it (a notice
 * lost while the subscriber reconnected, a lease or slot freed by expiry), jittered up to twice that.
 */
const DEFAULT_FALLBACK_RECHECK_MS = 1_000;
/**
 * An aggregation wait up to this long is waited out here; a longer one goes back to the bus with that
 * delay, so no handler is held for the seconds of a debounce.
 */
const AGGREGATION_WAIT_IN_PLACE_MS = 250;

/**
 * What a waiting query waits for: its session to be freed, a pipeline slot, or its own registration
 * by the ingress (it is `settling`: the orchestrator saw the message before the ingress's registration
 * landed, which is the usual order, and must not run before the session's earlier messages are queued).
 */
export type WaitReason = 'session' | 'slot' | 'settling';

/** Freed notices one ask keeps (an ask lasts one round trip; more notices than this within it are other queries' to take). */
const MAX_UNCLAIMED_PER_ASK = 8;

/**
 * A freed notice no slot waiter of this process was there to take (it came while the queries that
 * want a slot were asking): the first of them to wait for a slot takes it and asks again at once, the
 * others wait for the next one. One freed notice stands for one freed slot.
 */
interface UnclaimedFreed {
  claimed: boolean;
}

/** A query asking for its turn (`TurnWakeups.ask`): what it must not miss while the acquire is in flight. */
export interface TurnAsk {
  /** The session's lease key, as the release and register scripts publish it. */
  readonly session: string;
  /** The pipeline shard whose slots the query's session counts against. */
  readonly shard: number;
  /** Notices of the query's own session since the ask began. */
  ownNotices: number;
  /** Freed notices that came while it asked with no slot waiter to wake. */
  readonly unclaimed: UnclaimedFreed[];
}

interface Waiter {
  /** The session's lease key, as the release and register scripts publish it. */
  session: string;
  /** The pipeline shard whose slots the session counts against. */
  shard: number;
  reason: WaitReason;
  /** For a slot waiter: when the query first found the pipeline full (its place among this process's slot waiters). */
  since: number;
  wake(): void;
}

/**
 * Wakes the queries this process holds waiting for their turn (Redis pub/sub): when the release script
 * says a session or a pipeline slot was freed (`sessionFreedChannel`), every waiter of that session and
 * the longest-waiting one for a slot (or, with none waiting, the first query asking meanwhile that
 * turns out to need a slot); when the register script says a message this process saw first was
 * registered (`sessionRegisteredChannel`), that session's settling waiters. So a freed slot is taken at
 * once instead of after a poll interval, a settling query runs as soon as it is queued, and waiting
 * costs no Redis calls. Each replica gets every notice: across replicas a slot wakes one query per
 * replica and the script decides who takes it. At the pipeline cap a freed slot sends one query per
 * replica to ask, not every query whose ask was in flight.
 */
export class TurnWakeups {
  /** Waiters by session lease key. Bounded by the handlers the process runs at once. */
  private readonly bySession = new Map<string, Set<Waiter>>();
  /** Slot waiters; the one with the oldest `since` is woken first. */
  private readonly slotWaiters = new Set<Waiter>();
  private readonly keys: RedisKeys;
  private readonly freedChannel: string;
  private readonly registeredChannel: string;
  /** Asks in flight by session lease key: a notice that comes while a query asks is not missed by its wait. */
  private readonly asking = new Map<string, Set<TurnAsk>>();

  /** How long a wait for a session or a slot lasts without a notice (jittered up to twice that). */
  private readonly fallbackRecheckMs: number;

  /**
   * `subscriber` is a connection of its own (it enters subscriber mode); closed by `close()`.
   * `fallbackRecheckMs`: how long a wait for a session or a slot lasts without a notice; a settling
   * wait lasts at most until the query has settled by time. `layout`: the deployment's key layout, the
   * one the scripts name the session in their notices with.
   */
  constructor(
    private readonly subscriber: RedisClient,
    prefix: string,
    { fallbackRecheckMs = DEFAULT_FALLBACK_RECHECK_MS, layout = DEFAULT_KEY_LAYOUT }: { fallbackRecheckMs?: number; layout?: RedisKeyLayout } = {},
  ) {
    this.fallbackRecheckMs = fallbackRecheckMs;
    this.keys = redisKeys(prefix, layout);
    this.freedChannel = this.keys.sessionFreedChannel();
    this.registeredChannel = this.keys.sessionRegisteredChannel();
    // The process's main connection reports Redis going away and coming back; this one reconnects on
    // its own and waits fall back to asking again meanwhile, so its errors need no line of their own.
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (channel: string, session: string) => {
      if (channel === this.freedChannel) this.freed(session);
      else if (channel === this.registeredChannel) this.registered(session);
    });
  }

  /** Subscribes; ioredis subscribes again after every reconnection. */
  async start(): Promise<void> {
    await this.subscriber.subscribe(this.freedChannel, this.registeredChannel);
  }

  close(): void {
    for (const set of [...this.bySession.values()]) for (const w of [...set]) w.wake();
    this.subscriber.disconnect();
  }

  /**
   * Starts an ask for the session's turn, taken before the acquire goes out and passed to `wait`: it
   * collects the notices that concern the query while the acquire is in flight. Ended by `wait` or
   * `endAsk` (a query that needs no wait).
   */
  ask(s: SessionRef): TurnAsk {
    const ask: TurnAsk = { session: this.keys.sessionLease(s), shard: this.keys.pipelineShard(s), ownNotices: 0, unclaimed: [] };
    let set = this.asking.get(ask.session);
    if (!set) this.asking.set(ask.session, (set = new Set()));
    set.add(ask);
    return ask;
  }

  endAsk(ask: TurnAsk): void {
    const set = this.asking.get(ask.session);
    set?.delete(ask);
    if (set?.size === 0) this.asking.delete(ask.session);
  }

  /**
   * Resolves on a notice for what the query waits for, after `ms`, or on abort; at once when such a
   * notice came while it asked (one of its session's, or for a slot a freed one no other query of
   * this process took). Notices of other sessions do not send a session's waiter back to ask again:
   * under load they come every few milliseconds, and each would cost a script call that finds the
   * session as busy as before. `since` (slot waits): when the query first found the pipeline full.
   */
  wait(ask: TurnAsk, reason: WaitReason, ms: number, signal: AbortSignal, since = Date.now()): Promise<void> {
    this.endAsk(ask);
    if (ask.ownNotices > 0 || signal.aborted || (reason === 'slot' && this.claimFreed(ask))) return Promise.resolve();
    const session = ask.session;
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        const set = this.bySession.get(session);
        set?.delete(waiter);
        if (set?.size === 0) this.bySession.delete(session);
        this.slotWaiters.delete(waiter);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      const waiter: Waiter = { session, shard: ask.shard, reason, since, wake };
      const timer = setTimeout(wake, ms);
      signal.addEventListener('abort', wake, { once: true });
      let set = this.bySession.get(session);
      if (!set) this.bySession.set(session, (set = new Set()));
      set.add(waiter);
      if (reason === 'slot') this.slotWaiters.add(waiter);
    });
  }

  /**
   * A session or a slot was freed: the slot is one of the freed session's pipeline shard. Exposed for
   * unit tests; the subscription calls it.
   */
  freed(session: string): void {
    this.noticeFor(session);
    const own = this.bySession.get(session);
    for (const w of own ? [...own] : []) w.wake();
    const shard = this.keys.pipelineShardOfKey(session);
    const ofShard = (w: { shard: number }) => shard === undefined || w.shard === shard;
    let oldest: Waiter | undefined;
    for (const w of this.slotWaiters) if (ofShard(w) && (!oldest || w.since < oldest.since)) oldest = w;
    if (oldest) {
      oldest.wake();
      return;
    }
    // No slot waiter: the queries asking now may find the pipeline full; the first that does takes it.
    if (this.asking.size === 0) return;
    const unclaimed: UnclaimedFreed = { claimed: false };
    for (const asks of this.asking.values()) for (const a of asks) if (ofShard(a) && a.unclaimed.length < MAX_UNCLAIMED_PER_ASK) a.unclaimed.push(unclaimed);
  }

  /**
   * How long a wait for a session or a slot lasts when no notice ends it, at most `limit`: the recheck,
   * jittered up to twice that so the waiters of a lost notice do not all ask at once.
   */
  recheckMs(limit: number): number {
    return Math.min(this.fallbackRecheckMs * (1 + Math.random()), limit);
  }

  /**
   * Whether queries of this process wait for a slot of the session's pipeline shard: the shard was
   * full when they last asked, and its next freed slot is the longest-waiting one's.
   */
  slotQueued(s: SessionRef): boolean {
    const shard = this.keys.pipelineShard(s);
    for (const w of this.slotWaiters) if (w.shard === shard) return true;
    return false;
  }

  /** Takes a freed notice the ask saw and no other query took: true when there was one. */
  private claimFreed(ask: TurnAsk): boolean {
    const notice = ask.unclaimed.find((n) => !n.claimed);
    if (!notice) return false;
    notice.claimed = true;
    return true;
  }

  /** A message of the session was registered. Exposed for unit tests; the subscription calls it. */
  registered(session: string): void {
    this.noticeFor(session);
    const own = this.bySession.get(session);
    for (const w of own ? [...own] : []) if (w.reason === 'settling') w.wake();
  }

  private noticeFor(session: string): void {
    const asks = this.asking.get(session);
    if (asks) for (const a of asks) a.ownNotices++;
  }

  /** Asks in flight; bounded by the handlers the process runs at once. */
  get asks(): number {
    let n = 0;
    for (const set of this.asking.values()) n += set.size;
    return n;
  }

  get waiting(): number {
    let n = 0;
    for (const set of this.bySession.values()) n += set.size;
    return n;
  }
}

export type Turn = { outcome: 'acquired'; merged: string[]; rate?: AdmittedRate } | { outcome: 'finished' };

/** What a query asks of its turn beyond the lease. */
export interface TurnOptions {
  /** LangBot's message aggregation, when on: how the head waits. */
  aggregation?: AggregationTurn;
  /** Ends a holder's turn that is known to have ended (a lease a Redis failover brought back). */
  holders?: HolderCheck;
  /** The chat's rate window, decided with the lease. */
  rateWindow?: RateWindowRequest;
}

/**
 * A HolderCheck that asks `ended` about one holder at most once per `everyMs` in this process (many
 * waiters of a session, and each of their rechecks, would otherwise ask each time).
 */
export function throttledHolderCheck(ended: (holderQueryId: string) => Promise<boolean>, everyMs: number, onEnded?: (holderQueryId: string) => void): HolderCheck {
  const asked = new LRUCache<string, true>({ max: 10_000, ttl: everyMs });
  return {
    ended: async (holder) => {
      if (asked.has(holder)) return false;
      asked.set(holder, true);
      return ended(holder);
    },
    ...(onEnded ? { onEnded } : {}),
  };
}

/**
 * Tells whether the query holding a session has ended for good (its run's end is recorded where a
 * Redis data loss cannot undo it), so a waiter may end its turn. A Redis failover can bring back the
 * lease of a query whose reply already went out, with nothing left in Redis that would free it
 * before its TTL: no event of it will come, and no later reply of the session exists to pass it.
 */
export interface HolderCheck {
  ended(holderQueryId: string): Promise<boolean>;
  /** Told when a waiter ended a holder's turn. */
  onEnded?(holderQueryId: string): void;
}

/**
 * Waits until it is this query's turn in its session (and a pipeline slot is free). The wait is held
 * for at most `holdMs`, then the message goes back to the bus with a delay and keeps its place in the
 * session queue (its position is its stream sequence). A query whose reply already ended (a copy
 * redelivered because its ack was lost, or a message merged into another query) is `finished` and
 * must not run again. With aggregation the head waits out the debounce delay, then comes with the
 * envelopes (JSON) of the messages merged into it, and with a rate window, admission's decision on it.
 */
export async function waitForTurn(
  leases: SessionLeases, wakeups: TurnWakeups, route: ReplyRoute, queryId: string, streamSeq: number, holdMs: number, signal: AbortSignal,
  { aggregation, holders, rateWindow }: TurnOptions = {},
): Promise<Turn> {
  const deadline = Date.now() + holdMs;
  // When the query first found the pipeline full: its place among this process's slot waiters.
  let slotSince: number | undefined;
  // A query that comes while others of this process wait for a slot of its shard queues behind them
  // before it asks: the shard was full when they last asked, a freed slot goes to the longest-waiting
  // of them, and an ask now would most likely find it full and cost a round trip for nothing.
  if (wakeups.slotQueued(route) && !signal.aborted) {
    slotSince = Date.now();
    await wakeups.wait(wakeups.ask(route), 'slot', wakeups.recheckMs(holdMs), signal, slotSince);
  }
  for (;;) {
    const ask = wakeups.ask(route);
    try {
      const turn = await leases.acquireTurn(route, queryId, streamSeq, aggregation, rateWindow);
      if (turn.outcome === 'acquired') return { outcome: 'acquired', merged: turn.merged, ...(turn.rate ? { rate: turn.rate } : {}) };
      if (turn.outcome === 'finished') return { outcome: 'finished' };
      if (turn.outcome === 'session-busy' && holders) {
        const holder = await leases.holder(route);
        if (holder && holder !== queryId && (await holders.ended(holder))) {
          await leases.finish(route, holder);
          holders.onEnded?.(holder);
          continue;
        }
      }
      if (turn.outcome === 'aggregating' && (turn.waitMs > AGGREGATION_WAIT_IN_PLACE_MS || signal.aborted)) {
        throw new RetryableError(turn.waitMs, `waiting ${turn.waitMs} ms for more messages to merge`);
      }
      if (Date.now() >= deadline || signal.aborted) throw new RetryableError(turn.outcome === 'aggregating' ? turn.waitMs : 1_000, `session busy (${turn.outcome})`);
      const left = Math.max(0, deadline - Date.now());
      if (turn.outcome === 'aggregating') {
        await new Promise((r) => setTimeout(r, turn.waitMs));
      } else if (turn.outcome === 'settling') {
        await wakeups.wait(ask, 'settling', Math.min(turn.waitMs, left), signal);
      } else {
        const fallback = wakeups.recheckMs(left);
        if (turn.outcome === 'pipeline-full') await wakeups.wait(ask, 'slot', fallback, signal, (slotSince ??= Date.now()));
        else await wakeups.wait(ask, 'session', fallback, signal);
      }
    } finally {
      wakeups.endAsk(ask);
    }
  }
}
