import { RetryableError } from '@conveyor/bus';
import type { ReplyRoute } from '@conveyor/contracts';
import type { SessionLeases } from '@conveyor/pipeline';

const POLL_MS = 100;
/**
 * How soon a query that is settling asks again. It usually settles at once: the ingress registers every
 * message right after the bus took it, and the orchestrator often sees the message a moment before
 * that registration lands; waiting out the whole settle time then cost every such message 150 ms.
 */
const SETTLING_RECHECK_MS = 5;

/**
 * Waits until it is this query's turn in its session (and a pipeline slot is free). The wait is held
 * for at most `holdMs`, then the message goes back to the bus with a delay and keeps its place in the
 * session queue (its position is its stream sequence). A query whose reply already ended (a copy
 * redelivered because its ack was lost) is `finished` and must not run again.
 */
export async function waitForTurn(leases: SessionLeases, route: ReplyRoute, queryId: string, streamSeq: number, holdMs: number, signal: AbortSignal): Promise<'acquired' | 'finished'> {
  const deadline = Date.now() + holdMs;
  for (;;) {
    const outcome = await leases.acquire(route, queryId, streamSeq);
    if (outcome === 'acquired' || outcome === 'finished') return outcome;
    if (Date.now() >= deadline || signal.aborted) throw new RetryableError(1_000, `session busy (${outcome})`);
    const wait = outcome === 'settling' ? SETTLING_RECHECK_MS : POLL_MS + Math.random() * POLL_MS;
    await new Promise((r) => setTimeout(r, wait));
  }
}
