import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { context, propagation, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT } from '@opentelemetry/api';
import type { Redis } from 'ioredis';
import type { ReplyRoute } from '@conveyor/contracts';
import { planBatch } from './coalesce.js';
import { ReplyQueue, type SessionId } from './reply-queue.js';
import type { BatchEntry, DeliveryContext, OutboundReply, PlatformAdapter, QueuedPart, ReplyRef, ReplyState, SendResult } from './types.js';

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
}

export interface DelivererOptions {
  redis: Redis;
  prefix: string;
  adapters: PlatformAdapter[];
  logger?: DeliveryLogger;
  /** A part the platform did not take after all retries: record it on the query (QueryLog.failed). */
  onPermanentFailure?: (queryId: string, reason: string) => Promise<void>;
  /** How long a replica owns a session's sending without renewing. */
  leaseMs?: number;
  /** How often every replica looks for sessions whose sender died. */
  sweepMs?: number;
  /** Sessions sent to at once by this replica. */
  maxConcurrentSessions?: number;
}

interface Scope {
  ref: ReplyRef;
  parts: number;
}

const silent: DeliveryLogger = { info() {}, warn() {}, error() {} };
const tracer = () => trace.getTracer('@conveyor/delivery');

/**
 * The dispatcher's outbound side: ordered, coalescing, exactly-once-visible delivery of reply parts to
 * any platform adapter, shared by every replica through Redis (see ReplyQueue).
 *
 * A send inside `withReplyRef` (the runner event being handled) is queued in Redis and sent by
 * whichever replica holds the session's lease; the event's handler does not wait for the platform,
 * so a slow platform never blocks the consumer, and parts that pile up meanwhile are coalesced.
 * A send outside any event scope goes straight to the adapter (in order per session in this process).
 */
export class Deliverer {
  readonly queue: ReplyQueue;
  readonly stats: DeliveryStats = { enqueued: 0, duplicates: 0, sent: 0, coalesced: 0, failed: 0 };
  private readonly adapters: Map<string, PlatformAdapter>;
  private readonly scope = new AsyncLocalStorage<Scope>();
  private readonly logger: DeliveryLogger;
  private readonly leaseMs: number;
  private readonly sweepMs: number;
  private readonly maxSessions: number;
  private readonly token = randomUUID();
  private readonly draining = new Map<string, Promise<void>>();
  private readonly direct = new Map<string, Promise<unknown>>();
  private sweeper: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly opts: DelivererOptions) {
    this.queue = new ReplyQueue(opts.redis, opts.prefix);
    this.adapters = new Map(opts.adapters.map((a) => [a.name, a]));
    this.logger = opts.logger ?? silent;
    this.leaseMs = opts.leaseMs ?? 5_000;
    this.sweepMs = opts.sweepMs ?? 1_000;
    this.maxSessions = opts.maxConcurrentSessions ?? 512;
  }

  /** Starts the sweeper that takes over sessions whose sending replica died. */
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

  /** Runs the handling of one runner event; sends inside it are queued as that event's parts, then the event is sealed. */
  async withReplyRef<T>(ref: ReplyRef, fn: () => Promise<T>): Promise<T> {
    const s: Scope = { ref, parts: 0 };
    const result = await this.scope.run(s, fn);
    await this.queue.seal(ref.route, ref.queryId, ref.attempt, ref.seq, s.parts, ref.terminal === true);
    this.kick(ref.route);
    return result;
  }

  /** The send port. */
  async send(route: ReplyRoute, reply: OutboundReply, ref?: ReplyRef): Promise<SendResult> {
    const s = this.scope.getStore();
    if (!ref && !s) return this.sendDirect(route, reply);
    const r = ref ?? s!.ref;
    const sub = s && s.ref === r ? s.parts++ : 0;
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    const part: QueuedPart = { route, reply, queryId: r.queryId, key: `${r.attempt}:${r.seq}:${sub}`, trace: carrier };
    const added = await this.queue.enqueuePart(r.attempt, r.seq, sub, part);
    if (added) this.stats.enqueued++;
    else this.stats.duplicates++;
    if (!s || s.ref !== r) {
      // An explicit ref without a scope: the caller hands over one part per event.
      await this.queue.seal(route, r.queryId, r.attempt, r.seq, 1, r.terminal === true);
      this.kick(route);
    }
    return { delivered: true, queued: true };
  }

  /** Resolves when nothing of this replica's sending for the session is in progress (tests, benchmarks). */
  async idle(): Promise<void> {
    while (this.draining.size) await Promise.allSettled([...this.draining.values()]);
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
      this.adapterFor(route).deliver(route, reply, { queryId: route.replyTo, partKey: randomUUID(), chunkOrdinal: reply.stream ? 1 : 0, state, signal: this.abort.signal }),
    );
    this.direct.set(key, run);
    try {
      return await run;
    } finally {
      if (this.direct.get(key) === run) this.direct.delete(key);
    }
  }

  /** Starts sending the session's ready parts unless this replica already does. */
  kick(s: SessionId): void {
    if (this.stopped) return;
    const key = ReplyQueue.sessionMember(s);
    if (this.draining.has(key)) {
      // Already sending here: ask for one more pass once the current one ends.
      this.rerun.add(key);
      return;
    }
    if (this.draining.size >= this.maxSessions) return; // the sweeper comes back for it
    const p = this.drainSession(s)
      .catch((err) => this.logger.error({ err, botId: s.botId, sessionId: s.sessionId }, 'delivery pass failed'))
      .finally(() => {
        this.draining.delete(key);
        if (this.rerun.delete(key)) this.kick(s);
      });
    this.draining.set(key, p);
  }

  private readonly rerun = new Set<string>();

  private async sweep(): Promise<void> {
    try {
      for (const s of await this.queue.activeSessions()) this.kick(s);
    } catch (err) {
      this.logger.warn({ err }, 'delivery sweep failed');
    }
  }

  private async drainSession(s: SessionId): Promise<void> {
    for (let idlePasses = 0; idlePasses < 3; ) {
      if (!(await this.queue.acquire(s, this.token, this.leaseMs))) return;
      const renew = setInterval(() => void this.queue.renew(s, this.token, this.leaseMs).catch(() => undefined), Math.max(200, this.leaseMs / 3));
      renew.unref();
      let progressed = false;
      try {
        while (await this.passOnce(s)) progressed = true;
        if (!(await this.sessionHasPending(s))) await this.queue.deactivate(s);
      } finally {
        clearInterval(renew);
        await this.queue.release(s, this.token);
      }
      idlePasses = progressed ? 0 : idlePasses + 1;
      // A part queued by another replica while we held the lease is picked up here.
      if (!(await this.sessionHasReady(s))) return;
    }
  }

  private async sessionHasPending(s: SessionId): Promise<boolean> {
    for (const q of await this.queue.replies(s)) if (await this.queue.hasPending(q)) return true;
    return false;
  }

  private async sessionHasReady(s: SessionId): Promise<boolean> {
    // Cheap over-approximation: anything pending; drainSession re-checks contiguity under the lease.
    return !this.stopped && (await this.sessionHasPending(s)) && (await this.anyTakeable(s));
  }

  private async anyTakeable(s: SessionId): Promise<boolean> {
    for (const q of await this.queue.replies(s)) if (await this.queue.takeable(q)) return true;
    return false;
  }

  /** One batch per reply of the session, in reply order. True when anything was taken. */
  private async passOnce(s: SessionId): Promise<boolean> {
    let progressed = false;
    for (const queryId of await this.queue.replies(s)) {
      const batch = await this.queue.take(queryId);
      if (!batch) {
        if ((await this.queue.hget(queryId, 'closed')) === '1' && !(await this.queue.hasPending(queryId))) await this.queue.forgetReply(s, queryId);
        continue;
      }
      progressed = true;
      await this.sendBatch(queryId, batch.entries, batch.progress);
      await this.queue.finishBatch(queryId);
    }
    return progressed;
  }

  private async sendBatch(queryId: string, entries: BatchEntry[], progress: number): Promise<void> {
    const startOrdinal = Number((await this.queue.hget(queryId, 'chunks')) ?? 0);
    const plan = planBatch(entries, { [queryId]: startOrdinal });
    this.stats.coalesced += plan.coalesced;
    // Terminal seal on an open stream: close it with a final part repeating the newest snapshot.
    const terminal = entries.find((e): e is Extract<BatchEntry, { t: 'seal' }> => e.t === 'seal' && e.terminal);
    const work = plan.send.map((p) => ({ part: p.part, chunkOrdinal: p.chunkOrdinal }));
    const lastOrdinal = plan.send.length ? plan.send[plan.send.length - 1].chunkOrdinal : startOrdinal;
    for (let i = 0; i < work.length; i++) {
      if (i < progress) continue;
      await this.sendPart(queryId, work[i].part, work[i].chunkOrdinal);
      await this.queue.setProgress(queryId, i + 1);
    }
    await this.queue.hset(queryId, 'chunks', Math.max(lastOrdinal, startOrdinal + entries.filter((e) => e.t === 'part' && e.part.reply.stream).length));
    if (terminal) {
      if ((await this.queue.hget(queryId, 'open')) === '1') {
        const last = await this.queue.hget(queryId, 'last');
        const message = last ? JSON.parse(last) : [];
        const closing: QueuedPart = { route: terminal.route, reply: { message, isFinal: true, stream: true }, queryId, key: `close` };
        await this.sendPart(queryId, closing, Number((await this.queue.hget(queryId, 'chunks')) ?? 0) + 1);
      }
      await this.queue.hset(queryId, 'closed', '1');
    }
  }

  private async sendPart(queryId: string, part: QueuedPart, chunkOrdinal: number): Promise<void> {
    let reply = part.reply;
    const open = (await this.queue.hget(queryId, 'open')) === '1';
    // A notice after streamed parts goes out on the stream (LangBot §9.3) and, being final, closes it.
    if (open && !reply.stream) reply = { ...reply, stream: true };
    const adapter = this.adapterFor(part.route);
    const state = redisState(this.queue, queryId);
    const parent = part.trace ? propagation.extract(ROOT_CONTEXT, part.trace) : context.active();
    const result = await tracer().startActiveSpan(`${adapter.name} send`, { kind: SpanKind.CLIENT, attributes: {
      'conveyor.query_id': queryId, 'conveyor.bot.id': part.route.botId, 'conveyor.reply.final': reply.isFinal, 'conveyor.reply.stream': reply.stream,
    } }, parent, async (span) => {
      try {
        const r = await adapter.deliver(part.route, reply, { queryId, partKey: part.key, chunkOrdinal, state, signal: this.abort.signal });
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
    if (reply.stream) {
      await this.queue.hset(queryId, 'open', reply.isFinal ? '0' : '1');
      await this.queue.hset(queryId, 'last', JSON.stringify(reply.message));
    } else if (reply.isFinal) {
      await this.queue.hset(queryId, 'open', '0');
    }
    if (result.delivered) {
      this.stats.sent++;
      return;
    }
    this.stats.failed++;
    this.logger.warn({ queryId, adapter: adapter.name, reason: result.reason }, 'reply part not delivered');
    await this.opts.onPermanentFailure?.(queryId, `reply not delivered: ${result.reason}`).catch((err) =>
      this.logger.error({ err, queryId }, 'could not record the delivery failure'),
    );
  }
}

function redisState(queue: ReplyQueue, queryId: string): ReplyState {
  return {
    get: (name) => queue.hget(queryId, `a:${name}`),
    set: (name, value) => queue.hset(queryId, `a:${name}`, value),
  };
}

export function memoryState(): ReplyState {
  const m = new Map<string, string>();
  return { get: async (k) => m.get(k) ?? null, set: async (k, v) => void m.set(k, v) };
}
