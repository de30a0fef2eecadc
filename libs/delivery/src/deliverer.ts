import { AsyncLocalStorage } from 'node:async_hooks';
import { setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import { context, propagation, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT } from '@opentelemetry/api';
import type { ReplyRoute, ReplySessionKey } from '@conveyor/contracts';
import { planBatch } from './coalesce.js';
import { LRUCache } from 'lru-cache';
import { nextCallbackSequence, ReplyQueue, type SessionLeases, type BatchEntry, type CallbackNumbering, type EnqueueOutcome, type QueuedPart, type ShownState, type TakenBatch, type TakeOptions, type TakeResult } from '@conveyor/message-state';
import type { EventDelivery, OutboundReply, PlatformAdapter, ReplyRef, ReplyState, SendResult } from './types.js';
import type { RedisClient } from '@conveyor/redis-scripts';

export interface DeliveryLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface DeliveryStats {
  enqueued: number;
  duplicates: number;
  sent: number;
  coalesced: number;
  failed: number;
  /** Events or whole replies given up as lost (a gap or a stall outlasted its bound). */
  skipped: number;
  /**
   * Batches numbered above their reply's own earlier callbacks because another reply of the session
   * ended or restarted the session's count meanwhile: two of its replies went out side by side, which
   * only happens after Redis lost the session's turn.
   */
  interleaved: number;
}

export interface DelivererOptions {
  redis: RedisClient;
  prefix: string;
  adapters: PlatformAdapter[];
  logger?: DeliveryLogger;
  /** A part the platform did not take after all retries: record it on the query (QueryLog.failed). */
  onPermanentFailure?: (queryId: string, reason: string) => Promise<void>;
  /**
   * A reply's last event was taken for sending (its parts go out before any later reply of the
   * session): the session may go on to its next message. Safe to call again: a failure (Redis failing
   * over) is retried for up to `endRetryMs`.
   */
  onReplyEnded?: (route: ReplyRoute, queryId: string) => Promise<void>;
  /**
   * The session leases: on a server holding every hash slot, storing a run's last event finishes its
   * query's session turn in the same step (`ReplyQueue.endsTurnWithLastEvent`), and `onReplyEnded` is
   * left for the events stored otherwise. Pass the same leases `onReplyEnded` finishes.
   */
  sessions?: SessionLeases;
  /** How long ending a reply's session turn is retried before the turn is left to its lease's TTL. */
  endRetryMs?: number;
  /** How long a replica owns a session's sending without renewing. */
  leaseMs?: number;
  /** How often every replica looks for sessions whose sender died. Default: leaseMs. */
  sweepMs?: number;
  /** Sessions sent to at once by this replica. */
  maxConcurrentSessions?: number;
  /** How long a missing event may hold back the events after it before it is taken as lost. */
  gapMs?: number;
  /** How long a reply with no new event may hold back the session's later replies. */
  stallMs?: number;
  /** How long `delivered` waits for an event's parts to go out before it lets the event be acknowledged anyway. */
  sentWaitMs?: number;
  /**
   * Tells the other replicas which events' parts this one sent (they call `sentElsewhere`). The
   * replica that handled an event then acknowledges it at once; asking Redis instead leaves a window
   * in which a Redis data loss makes it store, and send, the parts a second time.
   */
  announceSent?: (events: EventRef[]) => void;
}

/** A runner event: its query, attempt and sequence number. */
export interface EventRef {
  queryId: string;
  attempt: number;
  seq: number;
}

/** An event whose parts are stored and not yet known to be sent: kept so they can be stored again. */
interface AwaitingEvent {
  ref: ReplyRef;
  parts: QueuedPart[];
  sent: Promise<void>;
  markSent: () => void;
}

/** How often `delivered` looks at Redis while another replica sends the event's session. */
const SENT_POLL_MS = 250;

type SealEntry = Extract<BatchEntry, { t: 'seal' }>;

interface Scope {
  ref: ReplyRef;
  parts: QueuedPart[];
}

const silent: DeliveryLogger = { info() {}, warn() {}, error() {} };
const tracer = () => trace.getTracer('@conveyor/delivery');
/** Batches taken in one session pass before the replica lets other sessions' work in. */
const MAX_BATCHES_PER_PASS = 1_000;

/**
 * The dispatcher's outbound side: ordered, coalescing, exactly-once-visible delivery of reply parts to
 * any platform adapter, shared by every replica through Redis (see ReplyQueue).
 *
 * Sends inside `withReplyRef` (the runner event being handled) are collected and stored with the
 * event's seal in one call; the replica then sends the session's ready parts itself unless another
 * replica is already doing so (that one picks them up before it lets go). A slow platform never blocks
 * the consumer, and parts that pile up meanwhile are coalesced. A send outside any event scope goes
 * straight to the adapter (in order per session in this process).
 */
export class Deliverer {
  readonly queue: ReplyQueue;
  readonly stats: DeliveryStats = { enqueued: 0, duplicates: 0, sent: 0, coalesced: 0, failed: 0, skipped: 0, interleaved: 0 };
  private readonly adapters: Map<string, PlatformAdapter>;
  private readonly scope = new AsyncLocalStorage<Scope>();
  private readonly logger: DeliveryLogger;
  private readonly leaseMs: number;
  private readonly sweepMs: number;
  private readonly maxSessions: number;
  private readonly takeOptions: TakeOptions;
  /**
   * The newest attempt of each query whose event this replica stored: a later event of that attempt is
   * admitted without asking Redis (the store still refuses it if the reply moved on meanwhile), and an
   * older attempt's is refused. Forgotten when the reply's last event is stored or an event is refused.
   */
  private readonly admitted = new LRUCache<string, number>({ max: 10_000 });
  private readonly token = randomUUID();
  private readonly draining = new Map<string, Promise<void>>();
  private readonly rerun = new Set<string>();
  private readonly direct = new Map<string, Promise<unknown>>();
  private readonly awaiting = new Map<string, AwaitingEvent>();
  private readonly sentWaitMs: number;
  private readonly endRetryMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly opts: DelivererOptions) {
    this.queue = new ReplyQueue(opts.redis, opts.prefix, opts.sessions);
    this.adapters = new Map(opts.adapters.map((a) => [a.name, a]));
    this.logger = opts.logger ?? silent;
    this.leaseMs = opts.leaseMs ?? 5_000;
    this.sweepMs = opts.sweepMs ?? this.leaseMs;
    this.maxSessions = opts.maxConcurrentSessions ?? 512;
    this.takeOptions = { leaseMs: this.leaseMs, maxEntries: 256, gapMs: opts.gapMs ?? 15_000, stallMs: opts.stallMs ?? 15 * 60_000 };
    this.sentWaitMs = opts.sentWaitMs ?? 60_000;
    this.endRetryMs = opts.endRetryMs ?? 60_000;
    // Every part being sent listens for the stop (one session at a time each): as many listeners as sessions.
    setMaxListeners(this.maxSessions + 16, this.abort.signal);
  }

  /** Starts the sweep that takes over sessions whose sending replica died. */
  start(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => void this.sweep(), this.sweepMs);
    this.sweeper.unref();
  }

  /** Stops taking new work; sends in progress finish (or their lease expires and another replica resumes). */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.stopped = true;
    if (this.sweeper) clearInterval(this.sweeper);
    const all = Promise.allSettled([...this.draining.values(), ...this.direct.values()]);
    const t = new Promise((r) => setTimeout(r, timeoutMs).unref());
    await Promise.race([all, t]);
    this.abort.abort();
  }

  /**
   * Whether events of this attempt can still change the reply (a newer attempt or the reply's end
   * makes them stale), asked before the output stages run; the store decides for good. The first
   * delivery of a query's first event is admitted without asking: before it nothing of the reply can
   * exist but an event published after it, which the stream hands out later.
   */
  async admits(route: ReplyRoute, queryId: string, attempt: number, event?: EventDelivery): Promise<boolean> {
    if (attempt === 1 && event?.seq === 0 && event.firstDelivery) return true;
    const known = this.admitted.get(queryId);
    if (known !== undefined && known >= attempt) return known === attempt;
    return this.queue.admits(route, queryId, attempt);
  }

  /** Runs the handling of one runner event; sends inside it become that event's parts, stored with its seal in one step. */
  async withReplyRef<T>(ref: ReplyRef, fn: () => Promise<T>): Promise<T> {
    const s: Scope = { ref, parts: [] };
    const result = await this.scope.run(s, fn);
    await this.store(ref, s.parts, true);
    return result;
  }

  /** The send port. */
  async send(route: ReplyRoute, reply: OutboundReply, ref?: ReplyRef): Promise<SendResult> {
    const s = this.scope.getStore();
    if (!ref && !s) return this.sendDirect(route, reply);
    const r = ref ?? s!.ref;
    const inScope = s !== undefined && s.ref === r;
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    const sub = inScope ? s.parts.length : 0;
    const part: QueuedPart = { route, reply, queryId: r.queryId, key: `${r.attempt}:${r.seq}:${sub}`, trace: carrier };
    // An explicit ref without a scope: the caller hands over one part per event.
    if (inScope) s.parts.push(part);
    else await this.store(r, [part], false);
    return { delivered: true, queued: true };
  }

  /** Resolves when nothing of this replica's sending is in progress (tests, benchmarks). */
  async idle(): Promise<void> {
    while (this.draining.size) await Promise.allSettled([...this.draining.values()]);
  }

  /** Stores an event's parts; `track` keeps them for `delivered` (the caller then must call it). */
  private async store(ref: ReplyRef, parts: QueuedPart[], track: boolean): Promise<void> {
    const key = eventKey(ref.queryId, ref.attempt, ref.seq);
    let markSent = () => {};
    const sent = new Promise<void>((resolve) => (markSent = resolve));
    // Registered before the first send can happen, so the sender's commit cannot be missed.
    if (track) this.awaiting.set(key, { ref, parts, sent, markSent });
    const outcome = await (this.storeAndSend(ref, parts) ?? this.storeOnly(ref, parts)).catch((err: unknown) => {
      this.awaiting.delete(key);
      throw err;
    });
    if (outcome === 'stored') {
      this.stats.enqueued += parts.length;
      if (ref.terminal) this.admitted.delete(ref.queryId);
      else this.admitted.set(ref.queryId, Math.max(ref.attempt, this.admitted.get(ref.queryId) ?? 0));
    } else {
      this.stats.duplicates += parts.length;
      this.awaiting.delete(key);
      if (outcome !== 'duplicate') this.admitted.delete(ref.queryId);
    }
  }

  /** Stores the event; a replica already sending the session picks its parts up with its next take. */
  private async storeOnly(ref: ReplyRef, parts: QueuedPart[]): Promise<EnqueueOutcome> {
    const outcome = await this.enqueueEvent(ref, parts);
    if (outcome === 'stored') this.kick(ref.route);
    return outcome;
  }

  /**
   * Stores the event and takes the session's next batch in one call, then sends it, when this replica
   * is not sending the session yet and may start a pass; undefined when it may not (`storeOnly`).
   */
  private storeAndSend(ref: ReplyRef, parts: QueuedPart[]): Promise<EnqueueOutcome> | undefined {
    const key = ReplyQueue.sessionMember(ref.route);
    if (!this.mayStartPass(key)) return undefined;
    const stored = this.queue.deliver(ref.route, ref.queryId, ref.attempt, ref.seq, parts, this.sealOf(ref), this.token, this.takeOptions);
    this.startPass(ref.route, key, stored.then((r) => (r.outcome === 'stored' ? r.taken : undefined), () => undefined));
    return stored.then((r) => r.outcome);
  }

  private enqueueEvent(ref: ReplyRef, parts: QueuedPart[]) {
    return this.queue.enqueue(ref.route, ref.queryId, ref.attempt, ref.seq, parts, this.sealOf(ref));
  }

  /** The event's seal; a last event ends its session turn as it is stored where the queue can (`endsTurnWithLastEvent`). */
  private sealOf(ref: ReplyRef): SealEntry {
    const seal: SealEntry = { t: 'seal', queryId: ref.queryId, terminal: ref.terminal === true, route: ref.route, attempt: ref.attempt, seq: ref.seq };
    if (seal.terminal && this.queue.endsTurnWithLastEvent) seal.turnEnded = true;
    return seal;
  }

  /**
   * Resolves once the parts of an event handled here went out (or were coalesced, superseded, or the
   * reply ended), so that the bus message is acknowledged only then: RedisClient holds the only other copy of
   * the parts, and it may lose its data. Meanwhile the parts stay in memory, and when the reply's state
   * is gone from Redis they are stored again. Bounded by `sentWaitMs`; call it outside any per-session
   * ordering, so that the session's later events keep coming (and coalescing) while this one waits.
   */
  async delivered(ref: ReplyRef): Promise<void> {
    const key = eventKey(ref.queryId, ref.attempt, ref.seq);
    const waiting = this.awaiting.get(key);
    if (!waiting) return;
    try {
      const deadline = Date.now() + this.sentWaitMs;
      while (!this.stopped && Date.now() < deadline) {
        let timer: NodeJS.Timeout | undefined;
        const sentHere = await Promise.race([
          waiting.sent.then(() => true),
          new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), SENT_POLL_MS))),
        ]);
        clearTimeout(timer);
        if (sentHere) return;
        // Redis being down is no answer: keep the parts and ask again.
        const where = await this.queue.passed(ref.route, ref.queryId, ref.attempt, ref.seq).catch(() => 'pending' as const);
        if (where === 'passed') return;
        if (where === 'lost') {
          this.logger.warn({ queryId: ref.queryId, attempt: ref.attempt, seq: ref.seq }, 'reply state gone from Redis; storing the event again');
          if ((await this.enqueueEvent(ref, waiting.parts).catch(() => 'pending' as const)) === 'stored') this.kick(ref.route);
        }
      }
    } finally {
      this.awaiting.delete(key);
    }
  }

  /** Another replica (or this one) sent these events' parts: the ones handled here may be acknowledged. */
  sentElsewhere(events: readonly EventRef[]): void {
    for (const e of events) this.awaiting.get(eventKey(e.queryId, e.attempt, e.seq))?.markSent();
  }

  private adapterFor(route: ReplyRoute): PlatformAdapter {
    const a = this.adapters.get(route.adapter);
    if (!a) throw new Error(`no outbound adapter for ${route.adapter}`);
    return a;
  }

  private async sendDirect(route: ReplyRoute, reply: OutboundReply): Promise<SendResult> {
    const key = `${route.adapter}\u0000${route.botId}\u0000${route.sessionId}`;
    const prev = this.direct.get(key) ?? Promise.resolve();
    const state = memoryState();
    const run = prev.catch(() => undefined).then(() =>
      this.adapterFor(route).deliver(route, reply, {
        queryId: route.replyTo, partKey: randomUUID(), chunkOrdinal: reply.stream ? 1 : 0, sequence: 1, timestamp: new Date(), state, signal: this.abort.signal,
      }),
    );
    this.direct.set(key, run);
    try {
      return await run;
    } finally {
      if (this.direct.get(key) === run) this.direct.delete(key);
    }
  }

  /** Starts sending the session's ready parts unless this replica already does. */
  kick(s: ReplySessionKey): void {
    if (this.stopped) return;
    const key = ReplyQueue.sessionMember(s);
    if (this.draining.has(key)) {
      // Already sending here: one more pass once the current one ends picks the new parts up.
      this.rerun.add(key);
      return;
    }
    if (this.mayStartPass(key)) this.startPass(s, key); // else the sweep comes back for it
  }

  /** Whether a pass over the session (`key`, its member) may start now: none runs here for it, and there is room for one. */
  private mayStartPass(key: string): boolean {
    return !this.stopped && !this.draining.has(key) && this.draining.size < this.maxSessions;
  }

  /**
   * Starts a pass over the session's replies, registered at once, so that no second pass (nor a
   * second take by this replica's token, which would hand back the same batch) starts beside it.
   * `first`: the pass's first take, already under way (`storeAndSend`); undefined there ends the pass.
   */
  private startPass(s: ReplySessionKey, key: string, first?: Promise<TakeResult | undefined>): void {
    const p = this.drainSession(s, first)
      .catch((err) => this.logger.error({ err, botId: s.botId, sessionId: s.sessionId }, 'delivery pass failed'))
      .finally(() => {
        this.draining.delete(key);
        if (this.rerun.delete(key)) this.kick(s);
      });
    this.draining.set(key, p);
  }

  private async sweep(): Promise<void> {
    try {
      for (const s of await this.queue.quietSessions(this.leaseMs)) this.kick(s);
    } catch (err) {
      this.logger.warn({ err }, 'delivery sweep failed');
    }
  }

  private async drainSession(s: ReplySessionKey, first?: Promise<TakeResult | undefined>): Promise<void> {
    // The batch after each one is taken with its commit (`sendBatch`).
    let next: TakeResult | undefined;
    for (let i = 0; i < MAX_BATCHES_PER_PASS && !this.stopped; i++) {
      const taken = i > 0 ? next : first ? await first : await this.queue.take(s, this.token, this.takeOptions);
      if (taken === undefined) return;
      if (taken.kind !== 'busy' && taken.skipped > 0) {
        this.stats.skipped += taken.skipped;
        this.logger.warn({ botId: s.botId, sessionId: s.sessionId, skipped: taken.skipped }, 'reply events given up as lost');
      }
      if (taken.kind !== 'batch') return;
      if (taken.passed.length > 0) await this.endPassed(taken.batch, taken.passed);
      const renew = setInterval(() => void this.queue.renew(s, this.token, this.leaseMs).catch(() => undefined), Math.max(200, this.leaseMs / 3));
      renew.unref();
      try {
        next = await this.sendBatch(s, taken.batch);
      } finally {
        clearInterval(renew);
      }
      if (next === undefined) return;
    }
    // A batch taken with the last commit and not sent in this pass stays in Redis as taken: the next
    // pass's take, under the same lease, hands it back.
    if (!this.stopped) this.rerun.add(ReplyQueue.sessionMember(s));
  }

  /**
   * Ends the session turn of replies `take` passed over: a later reply of the session went on, so their
   * turn had ended, but Redis lost that (and their session lease and pipeline slot came back with the
   * failover's older state). Their session is the batch's; a failure leaves the lease to its TTL.
   */
  private async endPassed(batch: TakenBatch, passed: readonly string[]): Promise<void> {
    const route = batch.entries.map((e) => (e.t === 'seal' ? e.route : e.part.route)).find((r) => r !== undefined);
    for (const queryId of passed) {
      this.logger.warn({ queryId, next: batch.queryId }, 'reply passed over: a later reply of its session went on, so its end was lost from Redis; ending its session turn again');
      if (route) await this.endTurn(route, queryId);
    }
  }

  /**
   * Sends a taken batch and records it; the session's next batch, taken with the record, or undefined
   * when it has nothing more ready (its lease is let go) or this replica lost it.
   */
  private async sendBatch(s: ReplySessionKey, batch: TakenBatch): Promise<TakeResult | undefined> {
    const { queryId, entries } = batch;
    const plan = planBatch(entries, { [queryId]: batch.shown.chunks });
    this.stats.coalesced += plan.coalesced;
    const terminal = entries.find((e): e is SealEntry => e.t === 'seal' && e.terminal);
    const shown: ShownState = { ...batch.shown };
    let numbering: CallbackNumbering = batch.numbering;
    // Whether the reply's own numbers lifted one of this batch's (another reply of the session ended or
    // restarted the count meanwhile).
    let lifted = false;
    const timestamp = new Date(batch.takenAt);
    const state = lazyState(this.queue, s, queryId);
    const work = plan.send.map((p) => ({ part: p.part, chunkOrdinal: p.chunkOrdinal }));
    // The batch holds the reply's last event, so the rest of the reply is in Redis and goes out from
    // whichever replica holds the session's sender lease, before any later reply of the session (take
    // serves the oldest reply first): the session's turn ends now, while the parts go out, and its next
    // message need not wait for the platform. A replica that takes the batch over ends it again, which
    // changes nothing. A seal stored with its turn ended (`turnEnded`) needs no second step.
    const ending = terminal && !terminal.turnEnded ? this.endTurn(terminal.route, queryId) : undefined;
    if (terminal && (shown.open || work.some((w) => w.part.reply.stream)) && !work.some((w) => w.part.reply.isFinal)) {
      // Terminal seal on an open stream: close it with a final part repeating the newest snapshot.
      const last = work.findLast((w) => w.part.reply.stream)?.part.reply.message;
      const message = last ?? (shown.last ? JSON.parse(shown.last) : []);
      const chunkOrdinal = Math.max(shown.chunks, work.at(-1)?.chunkOrdinal ?? 0) + 1;
      work.push({ part: { route: terminal.route, reply: { message, isFinal: true, stream: true }, queryId, key: 'close' }, chunkOrdinal });
    }
    for (let i = 0; i < work.length; i++) {
      const { part, chunkOrdinal } = work[i];
      // A notice after streamed parts goes out on the stream, as in LangBot, but keeps its own final flag, so a
      // failure notice closes it (LangBot gives it the last chunk's flag, usually not final: the stream stays open).
      const reply = shown.open && !part.reply.stream ? { ...part.reply, stream: true } : part.reply;
      const counted = nextCallbackSequence(numbering, reply.isFinal);
      numbering = nextCallbackSequence(numbering, reply.isFinal, batch.replySeq);
      if (numbering.seq !== counted.seq && !lifted) {
        lifted = true;
        this.stats.interleaved++;
        this.logger.warn({ queryId, sessionId: s.sessionId, sequence: numbering.seq, sessionCount: counted.seq },
          'another reply of the session changed its callback count meanwhile; this reply numbers on above its own callbacks');
      }
      if (i >= batch.progress) {
        await this.sendPart(queryId, part, reply, { chunkOrdinal, sequence: numbering.seq, timestamp, state, heldCallPossible: batch.heldCallMarked });
        if (i < work.length - 1) await this.queue.setProgress(s, queryId, i + 1);
      }
      if (reply.isFinal) shown.finalSent = true;
      if (reply.stream) {
        shown.open = !reply.isFinal;
        shown.last = JSON.stringify(reply.message);
        shown.chunks = Math.max(shown.chunks, chunkOrdinal);
      } else if (reply.isFinal) {
        shown.open = false;
      }
    }
    const streamedParts = entries.filter((e) => e.t === 'part' && e.part.reply.stream).length;
    shown.chunks = Math.max(shown.chunks, batch.shown.chunks + streamedParts);
    shown.ended = terminal !== undefined;
    // The platform has the batch: its events may be acknowledged even if recording that fails (Redis
    // going down now would otherwise make them be stored and sent again).
    // Events handled here are marked at once; only the others are announced to the other replicas.
    const handledElsewhere: EventRef[] = [];
    for (const e of entries) {
      if (e.t !== 'seal' || e.seq === undefined) continue;
      const event = { queryId: e.queryId, attempt: e.attempt ?? 0, seq: e.seq };
      const here = this.awaiting.get(eventKey(event.queryId, event.attempt, event.seq));
      if (here) here.markSent();
      else handledElsewhere.push(event);
    }
    if (handledElsewhere.length) this.opts.announceSent?.(handledElsewhere);
    // The parts went out: what they used (callback numbers) must be recorded even across a failover.
    const seals = entries.filter((e): e is SealEntry => e.t === 'seal' && e.seq !== undefined);
    const events = {
      attempt: seals[0]?.attempt ?? 0, lastSeq: Math.max(-1, ...seals.map((e) => e.seq ?? -1)), startedFrom: batch.numbering,
      ...(work.length > 0 ? { replySeq: numbering.seq } : {}),
    };
    const committed = await this.retrying('record a sent batch', queryId, () => this.queue.commit(s, queryId, this.token, this.takeOptions, shown, numbering, events));
    await ending;
    if (committed === undefined) return undefined;
    if (committed.outcome === 'lost') this.logger.warn({ queryId }, 'sender lease lost during a batch; the next holder sends it again');
    return committed.outcome === 'more' ? committed.taken : undefined;
  }

  /**
   * Ends the reply's session turn. A failover's connection errors must not leave the session's next
   * message waiting for the lease's TTL: it is tried again, and given up, the TTL frees the session.
   */
  private async endTurn(route: ReplyRoute, queryId: string): Promise<void> {
    const end = this.opts.onReplyEnded;
    if (end) await this.retrying('end the reply', queryId, () => end(route, queryId));
  }

  /**
   * Runs a Redis step that must happen after something went out to the platform, trying again while
   * it fails (100 ms doubling to 2 s) for up to `endRetryMs`; undefined when it never went through
   * (or this replica is stopping).
   */
  private async retrying<T>(what: string, queryId: string, step: () => Promise<T>): Promise<T | undefined> {
    const deadline = Date.now() + this.endRetryMs;
    for (let attempt = 1, wait = 100; ; attempt++, wait = Math.min(wait * 2, 2_000)) {
      try {
        const result = await step();
        if (attempt > 1) this.logger.info({ queryId, attempts: attempt }, `could ${what} after retries`);
        return result;
      } catch (err) {
        if (this.stopped || Date.now() + wait > deadline) {
          this.logger.error({ err, queryId, attempts: attempt }, `could not ${what}; giving up`);
          return undefined;
        }
        if (attempt === 1) this.logger.warn({ err, queryId }, `could not ${what}; trying again`);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private async sendPart(
    queryId: string,
    part: QueuedPart,
    reply: OutboundReply,
    at: { chunkOrdinal: number; sequence: number; timestamp: Date; state: ReplyState; heldCallPossible: boolean },
  ): Promise<void> {
    const adapter = this.adapters.get(part.route.adapter);
    // An adapter name no platform here has (a newer producer, a platform removed): the part can never go out.
    if (!adapter) return this.failPart(queryId, part.route.adapter, `no outbound adapter for ${part.route.adapter}`);
    const parent = part.trace ? propagation.extract(ROOT_CONTEXT, part.trace) : context.active();
    const result = await tracer().startActiveSpan(`${adapter.name} send`, { kind: SpanKind.CLIENT, attributes: {
      'conveyor.query_id': queryId, 'conveyor.bot.id': part.route.botId, 'conveyor.reply.final': reply.isFinal, 'conveyor.reply.stream': reply.stream,
      'conveyor.reply.sequence': at.sequence,
    } }, parent, async (span) => {
      try {
        const r = await adapter.deliver(part.route, reply, { queryId, partKey: part.key, ...at, signal: this.abort.signal });
        if (!r.delivered) span.setStatus({ code: SpanStatusCode.ERROR, message: r.reason });
        return r;
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        return { delivered: false, reason: (err as Error).message } as SendResult;
      } finally {
        span.end();
      }
    });
    if (result.delivered) {
      this.stats.sent++;
      return;
    }
    await this.failPart(queryId, adapter.name, result.reason);
  }

  private async failPart(queryId: string, adapter: string, reason: string): Promise<void> {
    this.stats.failed++;
    this.logger.warn({ queryId, adapter, reason }, 'reply part not delivered');
    await this.opts.onPermanentFailure?.(queryId, `reply not delivered: ${reason}`).catch((err) =>
      this.logger.error({ err, queryId }, 'could not record the delivery failure'),
    );
  }
}

function eventKey(queryId: string, attempt: number, seq: number): string {
  return `${queryId}:${attempt}:${seq}`;
}

/** Adapter state read from Redis on first use in a batch, written through at once (it must survive a crash mid-batch). */
function lazyState(queue: ReplyQueue, s: ReplySessionKey, queryId: string): ReplyState {
  const store = queue.adapterState(s, queryId);
  let loaded: Promise<Record<string, string>> | undefined;
  const load = () => (loaded ??= store.load());
  return {
    get: async (name) => (await load())[name] ?? null,
    set: async (name, value) => {
      (await load())[name] = value;
      await store.set(name, value);
    },
  };
}

export function memoryState(): ReplyState {
  const m = new Map<string, string>();
  return { get: async (k) => m.get(k) ?? null, set: async (k, v) => void m.set(k, v) };
}
