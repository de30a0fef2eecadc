import { RetryableError } from '@conveyor/bus';
import type { ReplyRoute } from '@conveyor/contracts';
import type { AggregationTurn, SessionLeases } from '@conveyor/pipeline';

const POLL_MS = 100;
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
  leases: SessionLeases, route: ReplyRoute, queryId: string, streamSeq: number, holdMs: number, signal: AbortSignal, aggregation?: AggregationTurn,
): Promise<Turn> {
  const deadline = Date.now() + holdMs;
  for (;;) {
    const turn = await leases.acquireTurn(route, queryId, streamSeq, aggregation);
    if (turn.outcome === 'acquired') return { outcome: 'acquired', merged: turn.merged };
    if (turn.outcome === 'finished') return { outcome: 'finished' };
    if (turn.outcome === 'aggregating' && (turn.waitMs > AGGREGATION_WAIT_IN_PLACE_MS || signal.aborted)) {
      throw new RetryableError(turn.waitMs, `waiting ${turn.waitMs} ms for more messages to merge`);
    }
    if (Date.now() >= deadline || signal.aborted) throw new RetryableError(turn.outcome === 'aggregating' ? turn.waitMs : 1_000, `session busy (${turn.outcome})`);
    const wait = turn.outcome === 'aggregating' ? turn.waitMs : turn.outcome === 'settling' ? SETTLING_RECHECK_MS : POLL_MS + Math.random() * POLL_MS;
    await new Promise((r) => setTimeout(r, wait));
  }
}
