import { z } from 'zod';
import { redisKeys, ReplyRoute, type ReplySessionKey, type RedisKeys } from '@conveyor/contracts';
import { holdsEverySlot, loadScripts, type RedisClient } from '@conveyor/redis-scripts';
import type { BatchEntry, QueuedPart } from './reply-parts.js';
import type { SessionLeases } from './session-leases.js';
import { runAttemptKeys } from './run-attempts.js';
import { COMMIT_RESULTS, ENQUEUE_RESULTS, HELD_RESULTS, resultName, ScriptResultError } from './results.js';

/** A member of the active-sessions set, as `sessionMember` writes it. */
const SessionMember = z.tuple([z.string(), ReplyRoute.shape.adapter, z.string()]);

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['reply-enqueue', 'reply-take', 'reply-deliver', 'reply-commit', 'reply-renew', 'reply-enqueue-ending', 'reply-deliver-ending'] as const);

/** Long enough for any reply to be delivered with all its retries; idle state then disappears. */
const STATE_TTL_MS = 6 * 3600_000;
/** Idle sessions forget their callback numbering, as LangBot's does after its idle timeout. */
const NUMBERING_TTL_MS = 3600_000;

export type EnqueueOutcome = keyof typeof ENQUEUE_RESULTS;
export type CommitOutcome = keyof typeof COMMIT_RESULTS;
/** What `commit` answers: with `more`, the session's next batch, taken in the same step. */
export type CommitResult = { outcome: 'more'; taken: TakeResult } | { outcome: Exclude<CommitOutcome, 'more'> };

export interface TakenBatch {
  queryId: string;
  entries: BatchEntry[];
  /** Parts of the batch already sent by a replica that died. */
  progress: number;
  /** When the batch was taken: the timestamp of every part in it, so a resend is identical. */
  takenAt: number;
  shown: ShownState;
  /** The session's callback numbering when the batch was taken. */
  numbering: CallbackNumbering;
  /** The highest callback sequence this reply used in its earlier batches (0: none recorded). */
  replySeq: number;
  /**
   * Whether a call held for the session's reply (an HTTP-bot `/sync`) was registered lately; when not,
   * the batch's parts need no look for one (`redisKeys.replyHeldCallMark`).
   */
  heldCallMarked: boolean;
}

/** What the platform has been shown of a reply. */
export interface ShownState {
  /** Streamed snapshots so far, coalesced ones included (LangBot's msg_sequence). */
  chunks: number;
  open: boolean;
  /** The newest snapshot's message chain, JSON. */
  last: string;
  /** A final part went out (the user has the whole reply). */
  finalSent: boolean;
  /** The run's last event was taken: the reply takes nothing more. */
  ended: boolean;
}

/** LangBot's per-session HTTP-bot callback numbering: restart at 1 after a final callback, else count up. */
export interface CallbackNumbering {
  seq: number;
  lastFinal: boolean;
}

/**
 * The next callback's numbering. `replySeq`, the highest number the reply being sent already used,
 * is a floor: the session's count restarts at 1 after a final, and when another reply of the session
 * ended (or restarted the count) in between, which only happens after Redis lost the session's turn
 * and two of its replies ran side by side, following the count would repeat a number of this reply.
 * A repeated (session_id, reply_to, sequence) with another body is dropped by an integrator that
 * deduplicates on it, so the reply goes on above its own numbers instead.
 */
export function nextCallbackSequence(n: CallbackNumbering, isFinal: boolean, replySeq = 0): CallbackNumbering {
  const seq = n.lastFinal ? 1 : n.seq + 1;
  return { seq: Math.max(seq, replySeq + 1), lastFinal: isFinal };
}

/**
 * `passed` (with a batch): open replies of the session passed over because a later reply went on,
 * which it could only do after their session turn ended; Redis lost their end (a failover's partial
 * loss). Each is reported once, for the caller to end its session turn again.
 */
export type TakeResult = { kind: 'busy' } | { kind: 'idle'; skipped: number } | { kind: 'batch'; batch: TakenBatch; skipped: number; passed: string[] };

/** A part as the enqueue scripts store it. */
function encodeParts(parts: readonly QueuedPart[]): string[] {
  return parts.map((part) => JSON.stringify({ t: 'part', part } satisfies BatchEntry));
}

/** How `take` is bounded: the sender lease, the batch size, and how long a gap or a stall may hold a reply back. */
export interface TakeOptions {
  leaseMs: number;
  maxEntries: number;
  gapMs: number;
  stallMs: number;
}

/** What `deliver` did: the event's outcome and, when it was stored, the take that followed it. */
export type DeliverResult = { outcome: 'stored'; taken: TakeResult } | { outcome: Exclude<EnqueueOutcome, 'stored'> };

/** A take's reply, as `reply-take` (and `reply-deliver` after its first element) returns it. */
function parseTake(r: readonly unknown[]): TakeResult {
  if (r[0] === 'busy') return { kind: 'busy' };
  if (r[0] === 'idle') return { kind: 'idle', skipped: Number(r[1]) };
  const [, queryId, batch, progress, takenAt, chunks, open, last, seq, lastFinal, heldCallMark, replySeq, skipped, ...passed] = r.map(String);
  return {
    kind: 'batch',
    skipped: Number(skipped),
    passed,
    batch: {
      queryId,
      entries: JSON.parse(batch) as BatchEntry[],
      progress: Number(progress),
      takenAt: Number(takenAt),
      shown: { chunks: Number(chunks), open: open === '1', last, finalSent: false, ended: false },
      numbering: { seq: Number(seq), lastFinal: lastFinal === '1' },
      replySeq: Number(replySeq),
      heldCallMarked: heldCallMark === '1',
    },
  };
}

/**
 * Reply parts in Redis, shared by every dispatcher replica: one script per step, one call each.
 *
 * - `enqueue` stores what one runner event produced (its parts and its seal) at once; a part of an
 *   older attempt, an event already stored or passed, and anything for a reply that has ended are
 *   refused, which makes redelivered events no-ops.
 * - `take` runs under the session's sender lease (taking it when free): it moves the ready events of
 *   the session's oldest unfinished reply into that reply's `batch` (or returns a batch a dead replica
 *   left), with what the platform was shown so far and the session's callback numbering.
 * - `deliver` is `enqueue` and then `take` in one call, for a replica not yet sending the session:
 *   the two ran back to back with nothing between them.
 * - `commit` records that the batch went out, and lets the lease go when nothing else is ready.
 * A batch stays in Redis until committed, so a replica that dies mid-batch leaves it to the next
 * lease holder, who sends it again identically (same sequences, same timestamp).
 */
export class ReplyQueue {
  readonly keys: RedisKeys;
  /**
   * Whether storing a run's last event ends its query's session turn in the same step (`seal.turnEnded`
   * on the events stored so): given the session leases, on a server that holds every hash slot. The
   * session's keys and the reply session's are in different slots, which a Redis Cluster refuses in one
   * script; there the turn ends in a call of its own when the event is taken for sending.
   */
  readonly endsTurnWithLastEvent: boolean;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly sessions?: SessionLeases,
  ) {
    this.keys = redisKeys(prefix);
    this.endsTurnWithLastEvent = sessions !== undefined && holdsEverySlot(redis);
  }

  static sessionMember(s: ReplySessionKey): string {
    return JSON.stringify([s.botId, s.adapter, s.sessionId]);
  }

  /** The session a member names; undefined for a member not written by `sessionMember` (an older shape). */
  static parseMember(member: string): ReplySessionKey | undefined {
    let json: unknown;
    try {
      json = JSON.parse(member);
    } catch {
      return undefined;
    }
    const parsed = SessionMember.safeParse(json);
    if (!parsed.success) return undefined;
    const [botId, adapter, sessionId] = parsed.data;
    return { botId, adapter, sessionId };
  }

  /** With `seal.turnEnded` (see `endsTurnWithLastEvent`), a stored event also finishes its query's session turn. */
  async enqueue(route: ReplyRoute, queryId: string, attempt: number, seq: number, parts: QueuedPart[], seal: BatchEntry & { t: 'seal' }): Promise<EnqueueOutcome> {
    const end = this.endStep(route, queryId, seal);
    const keys = this.enqueueKeys(route, queryId);
    const args = this.enqueueArgs(route, queryId, attempt, seq, parts.length, seal);
    const r = end
      ? await scripts['reply-enqueue-ending'].run(this.redis, [...keys, ...end.keys], [...args, ...end.args, ...encodeParts(parts)])
      : await scripts['reply-enqueue'].run(this.redis, keys, [...args, ...encodeParts(parts)]);
    return resultName('reply-enqueue', ENQUEUE_RESULTS, r);
  }

  /**
   * The session turn's end to run with a stored event: only for a seal marked `turnEnded`, which only a
   * queue that `endsTurnWithLastEvent` marks. The query's run attempts are forgotten in the same step.
   */
  private endStep(route: ReplyRoute, queryId: string, seal: BatchEntry & { t: 'seal' }) {
    if (!seal.turnEnded) return undefined;
    if (!this.sessions || !this.endsTurnWithLastEvent) throw new Error('a seal marked turnEnded needs a queue that ends session turns with the last event');
    const finish = this.sessions.finishStep(route, queryId);
    return { keys: [...finish.keys, ...runAttemptKeys(this.keys, queryId)], args: finish.args };
  }

  /**
   * `enqueue`, then, when the event was stored, `take` for this replica in the same round trip. Only
   * for a replica that is not sending the session already: a take by the lease's own holder hands
   * back the batch being sent.
   */
  async deliver(route: ReplyRoute, queryId: string, attempt: number, seq: number, parts: QueuedPart[], seal: BatchEntry & { t: 'seal' }, token: string, o: TakeOptions): Promise<DeliverResult> {
    const k = this.keys;
    const end = this.endStep(route, queryId, seal);
    const keys = [...this.enqueueKeys(route, queryId), k.replySessionSender(route), k.replySessionSequence(route), k.replyPrefix(route), k.replyHeldCallMark(route)];
    const args = [...this.enqueueArgs(route, queryId, attempt, seq, parts.length, seal), token, o.leaseMs, o.maxEntries, o.gapMs, o.stallMs];
    const r = end
      ? await scripts['reply-deliver-ending'].run(this.redis, [...keys, ...end.keys], [...args, ...end.args, ...encodeParts(parts)])
      : await scripts['reply-deliver'].run(this.redis, keys, [...args, ...encodeParts(parts)]);
    if (!Array.isArray(r) || r.length < 1) throw new ScriptResultError('reply-deliver', r);
    const outcome = resultName('reply-deliver', ENQUEUE_RESULTS, r[0]);
    if (outcome !== 'stored') return { outcome };
    if (r.length < 2) throw new ScriptResultError('reply-deliver', r);
    return { outcome, taken: parseTake(r.slice(1)) };
  }

  private enqueueKeys(route: ReplyRoute, queryId: string): string[] {
    return [this.keys.reply(route, queryId), this.keys.replySessionReplies(route), this.keys.replyActiveSessions(route)];
  }

  /** `reply-enqueue`'s ARGV[1..8], which `reply-deliver` shares. */
  private enqueueArgs(route: ReplyRoute, queryId: string, attempt: number, seq: number, partCount: number, seal: BatchEntry & { t: 'seal' }): (string | number)[] {
    return [attempt, seq, Date.now(), STATE_TTL_MS, queryId, ReplyQueue.sessionMember(route), `${partCount}|${JSON.stringify(seal)}`, seal.terminal ? '1' : '0'];
  }

  /**
   * Where event `seq` of `attempt` stands: `passed` when it is behind the reply (sent, coalesced,
   * superseded or ended), `pending` while it waits in Redis or may be in the batch being sent, `lost`
   * when Redis no longer holds it. Lost is judged per event, not per reply: after a data loss a later
   * event of the same reply may already have brought the reply's state back, without this event.
   */
  async passed(s: ReplySessionKey, queryId: string, attempt: number, seq: number): Promise<'passed' | 'pending' | 'lost'> {
    const [current, next, closed, batch, stored, final] = await this.redis.hmget(this.keys.reply(s, queryId), 'attempt', 'next', 'closed', 'batch', `e:${seq}`, 'final');
    if (current === null) return 'lost';
    if (closed === '1' || Number(current) > attempt) return 'passed';
    // After the final part a newer attempt's last event waits at the reply's end (see enqueue).
    if (final === '1' && Number(current) < attempt) return 'pending';
    // An older attempt's late event brought the reply back after a loss: this attempt's events are gone.
    if (Number(current) < attempt) return 'lost';
    if (stored !== null || batch !== null) return 'pending';
    return Number(next ?? 0) > seq ? 'passed' : 'lost';
  }

  /** Whether events of this attempt may still change the reply (read-only; `enqueue` decides for good). */
  async admits(s: ReplySessionKey, queryId: string, attempt: number): Promise<boolean> {
    const [current, closed] = await this.redis.hmget(this.keys.reply(s, queryId), 'attempt', 'closed');
    return closed !== '1' && attempt >= Number(current ?? 0);
  }

  async take(s: ReplySessionKey, token: string, o: TakeOptions): Promise<TakeResult> {
    const r = await scripts['reply-take'].run(
      this.redis,
      [this.keys.replySessionReplies(s), this.keys.replySessionSender(s), this.keys.replyActiveSessions(s), this.keys.replySessionSequence(s), this.keys.replyPrefix(s), this.keys.replyHeldCallMark(s)],
      [token, o.leaseMs, o.maxEntries, Date.now(), ReplyQueue.sessionMember(s), o.gapMs, o.stallMs],
    );
    if (!Array.isArray(r) || r.length < 1) throw new ScriptResultError('reply-take', r);
    return parseTake(r);
  }

  async setProgress(s: ReplySessionKey, queryId: string, progress: number): Promise<void> {
    await this.redis.hset(this.keys.reply(s, queryId), 'progress', progress);
  }

  /**
   * Records the batch as sent, and goes on with the session in the same round trip: `more`, the lease
   * is kept and `taken` is the session's next batch as `take` would hand it back (a batch, or idle with
   * the lease let go); `idle`: nothing is ready and the lease was let go; `lost`: this replica lost the
   * lease meanwhile. A lease lost with the batch (Redis rolled back to before the take) while no
   * replica holds the session is taken back and the batch recorded as usual. `events`: the attempt and
   * the last event seq of the batch (-1 when it sealed none), whose take is then applied again, and the
   * numbering the batch started from (the take's): only while nothing was numbered since. `replySeq`:
   * the highest callback sequence the reply used with this batch, undefined when the batch sent nothing.
   */
  async commit(
    s: ReplySessionKey, queryId: string, token: string, o: TakeOptions, shown: ShownState, numbering: CallbackNumbering,
    events: { attempt: number; lastSeq: number; startedFrom: CallbackNumbering; replySeq?: number },
  ): Promise<CommitResult> {
    const k = this.keys;
    const r = await scripts['reply-commit'].run(
      this.redis,
      [k.reply(s, queryId), k.replySessionSender(s), k.replySessionSequence(s), k.replySessionReplies(s), k.replyActiveSessions(s), k.replyPrefix(s), k.replyHeldCallMark(s)],
      [token, o.leaseMs, shown.chunks, shown.open ? '1' : '0', shown.last, shown.ended ? '1' : '0', numbering.seq, numbering.lastFinal ? '1' : '0', NUMBERING_TTL_MS, shown.finalSent ? '1' : '0',
        queryId, ReplyQueue.sessionMember(s), Date.now(), o.stallMs, events.attempt, events.lastSeq, `${events.startedFrom.seq}|${events.startedFrom.lastFinal ? '1' : '0'}`, events.replySeq ?? '',
        o.maxEntries, o.gapMs],
    );
    if (!Array.isArray(r) || r.length < 1) throw new ScriptResultError('reply-commit', r);
    const outcome = resultName('reply-commit', COMMIT_RESULTS, r[0]);
    if (outcome !== 'more') return { outcome };
    if (r.length < 2) throw new ScriptResultError('reply-commit', r);
    return { outcome, taken: parseTake(r.slice(1)) };
  }

  async renew(s: ReplySessionKey, token: string, leaseMs: number): Promise<boolean> {
    return resultName('reply-renew', HELD_RESULTS, await scripts['reply-renew'].run(this.redis, [this.keys.replySessionSender(s)], [token, leaseMs])) === 'held';
  }

  /**
   * Sessions whose last activity is older than `idleMs`: their sender may have died (the takeover
   * sweep). Every delivery shard's set is read (one command each, pipelined); at most `limit` in all.
   */
  async quietSessions(idleMs: number, limit = 200): Promise<ReplySessionKey[]> {
    const before = Date.now() - idleMs;
    const perShard = await Promise.all(this.keys.allReplyActiveSessions().map((key) => this.redis.zrangebyscore(key, '-inf', before, 'LIMIT', 0, limit)));
    return perShard.flat().slice(0, limit).map(ReplyQueue.parseMember).filter((s) => s !== undefined);
  }

  adapterState(s: ReplySessionKey, queryId: string) {
    const key = this.keys.replyAdapterState(s, queryId);
    return {
      load: () => this.redis.hgetall(key),
      set: async (name: string, value: string) => {
        await this.redis.multi().hset(key, name, value).pexpire(key, STATE_TTL_MS).exec();
      },
    };
  }
}
