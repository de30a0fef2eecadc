import { PermanentError, RetryableError, type ReplyRoute } from '@conveyor/contracts';
import type { AggregationTurn, RateWindowRequest, SessionLeases } from './session-leases.js';
import { waitForTurn, type HolderCheck, type TurnWakeups } from './session-turn.js';
import { TurnRateWindow, type RedisFixedWindow } from './rate-window.js';

/**
 * How the work done in a query's turn ended, as the work reports it:
 * - `handed-off`: its run was published; the session stays held until the reply ends at the
 *   dispatcher, which frees it.
 * - `replied`: events went out from here and the last of them was `done`; the dispatcher frees the
 *   session once it has sent them, so the session's next reply is not held behind this one.
 * - `ended`: nothing went out; the session is freed here, for good.
 */
export type TurnEnd = 'handed-off' | 'replied' | 'ended';

/** What the work of a turn gets from the turn, and may tell it while it runs. */
export interface TurnControl {
  /**
   * The chat's rate window for the work's rate-limit stage: admission's decision when the stage asks
   * what admission asked (no round trip), Redis otherwise.
   */
  readonly rateWindow: Pick<TurnRateWindow, 'require'>;
  /**
   * The run was published. Said as soon as the publish is acknowledged, so that a failure after it
   * (the work throws) does not free a session whose reply is already on its way.
   */
  handedOff(): void;
}

export interface QueryTurnRequest {
  route: ReplyRoute;
  queryId: string;
  /** The message's stream sequence: its place in the session's queue. */
  streamSeq: number;
  signal: AbortSignal;
  /** LangBot's message aggregation, when on: how the head waits, and this message's envelope to stash. */
  aggregation?: { turn: AggregationTurn; stash?: { envelopeJson: string; maxPending: number } };
  /**
   * The chat's rate window, when the pipeline's rate-limit stage runs in this turn: admission decides
   * it with the lease, and a query that ends before the stage gives its count back.
   */
  rateWindow?: RateWindowRequest;
  /**
   * When set, a wait that runs out is answered by this (the message is published again, keeping its
   * place) instead of going back to the bus with a delay, which would spend one of its deliveries.
   */
  requeue?: () => Promise<void>;
  /** This is the message's last delivery: an error now ends it for good. */
  lastDelivery: boolean;
  /**
   * Told when the work failed for good (a `PermanentError`, or any error on the last delivery) and
   * nothing was handed off, after the session was freed: a reply that got events must still end.
   */
  abandoned?: () => Promise<void>;
}

export type QueryTurnOutcome =
  /** The wait ran out and the message was published again (`requeue`). */
  | { kind: 'requeued' }
  /** The query already ended (a redelivered copy, or a message merged into another): it must not run again. */
  | { kind: 'finished' }
  | { kind: 'ran'; end: TurnEnd };

export interface QueryTurnOptions {
  /** How long a handler waits for the turn before the message goes back to the bus. */
  holdMs: number;
  /** How often a held lease (and its pipeline slot) is extended while the work runs. */
  refreshEveryMs: number;
  /**
   * Told when a best-effort step failed and the turn went on without it (the log line with the
   * query's trace): `extend` (the lease may lapse, and another replica take the session, if Redis
   * stays away past its TTL), `release` (the session waits out its lease), `uncount` (the chat's
   * window keeps one request it should have given back).
   */
  onStepFailed?: (step: 'extend' | 'release' | 'uncount', queryId: string, err: unknown) => void;
}

/**
 * The owner of a query's turn in its session at the orchestrator: waits for it (in arrival order,
 * within the pipeline cap, merging aggregated messages, deciding the chat's rate window), keeps the
 * lease alive while the work runs, and frees, keeps or finishes the session by how the work ended. A
 * deferral (`RetryableError`) keeps the lease and the query's place; any other failure frees the
 * session unless the run was already handed off. A query that leaves before its rate-limit stage
 * took admission's count gives the count back, in the same step as it frees the session where it can.
 */
export class QueryTurns {
  constructor(
    private readonly leases: SessionLeases,
    private readonly wakeups: TurnWakeups,
    private readonly window: RedisFixedWindow,
    private readonly options: QueryTurnOptions,
    private readonly holders?: HolderCheck,
  ) {}

  /**
   * Ends a query that never takes its turn (the stages before the turn dropped it): it leaves its
   * session's queue, a query waiting behind it asks again at once, and it is remembered as finished,
   * so neither a redelivered copy nor a registration that lands after this queues it again.
   */
  async skip(route: ReplyRoute, queryId: string): Promise<void> {
    await this.leases.finish(route, queryId);
  }

  async run(req: QueryTurnRequest, work: (merged: readonly string[], control: TurnControl) => Promise<TurnEnd>): Promise<QueryTurnOutcome> {
    const { route, queryId } = req;
    const stash = req.aggregation?.stash;
    if (stash) await this.leases.stash(route, queryId, stash.envelopeJson, stash.maxPending);
    let turn;
    try {
      turn = await waitForTurn(this.leases, this.wakeups, route, queryId, req.streamSeq, this.options.holdMs, req.signal, {
        ...(req.aggregation ? { aggregation: req.aggregation.turn } : {}),
        ...(this.holders ? { holders: this.holders } : {}),
        ...(req.rateWindow ? { rateWindow: req.rateWindow } : {}),
      });
    } catch (err) {
      if (!(err instanceof RetryableError) || !req.requeue) throw err;
      await req.requeue();
      return { kind: 'requeued' };
    }
    if (turn.outcome === 'finished') return { kind: 'finished' };

    let handedOff = false;
    const rateWindow = new TurnRateWindow(this.window, route, queryId, req.rateWindow, turn.rate);
    const control: TurnControl = { rateWindow, handedOff: () => void (handedOff = true) };
    const failed = (step: 'extend' | 'release' | 'uncount') => (err: unknown) => this.options.onStepFailed?.(step, queryId, err);
    const refresh = setInterval(() => void this.leases.extend(route, queryId).catch(failed('extend')), this.options.refreshEveryMs);
    try {
      const end = await work(turn.merged, control);
      if (end === 'ended' && !handedOff) {
        await this.leases.finish(route, queryId, rateWindow.unasked);
      } else {
        // The session stays held (the dispatcher frees it): only the count goes back, if it must. A
        // count Redis failed to take back costs the chat one request of this window, less than a
        // redelivery of a query whose notices already went out.
        const unasked = rateWindow.unasked;
        if (unasked) await this.window.uncount(unasked, queryId).catch(failed('uncount'));
      }
      return { kind: 'ran', end: handedOff ? 'handed-off' : end };
    } catch (err) {
      if (!handedOff) {
        if (!(err instanceof RetryableError)) await this.leases.release(route, queryId, rateWindow.unasked).catch(failed('release'));
        if (err instanceof PermanentError || req.lastDelivery) await req.abandoned?.().catch(() => undefined);
      }
      throw err;
    } finally {
      clearInterval(refresh);
    }
  }
}
