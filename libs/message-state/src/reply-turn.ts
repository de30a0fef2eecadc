import { LRUCache } from 'lru-cache';
import type { SessionLeases, SessionRef } from './session-leases.js';
import type { StreamedFlag } from './streamed-flag.js';

/**
 * The dispatcher's side of a session turn, while the reply it sends goes out: the session stays held
 * as long as the reply streams, later notices of a reply that streamed take the chunk path, and a
 * reply that can never go out frees its session. The orchestrator's side is QueryTurns; the end of a
 * reply (`SessionLeases.finish`) is the Deliverer's, once the last part went.
 */
export class ReplyTurns {
  /** Queries whose lease this replica extended within the last tenth of its TTL. */
  private readonly recentlyKept: LRUCache<string, true>;

  constructor(
    private readonly leases: SessionLeases,
    private readonly streamedFlag: StreamedFlag,
    private readonly leaseTtlMs: number,
  ) {
    this.recentlyKept = new LRUCache({ max: 10_000, ttl: Math.max(1, Math.floor(leaseTtlMs / 10)) });
  }

  /**
   * A part of the reply went out and more follows: the session stays held for another lease TTL.
   * Once per tenth of the TTL per query is plenty, so a reply of hundreds of chunks does not cost a
   * Redis call per chunk.
   */
  async keep(session: SessionRef, queryId: string): Promise<void> {
    if (this.recentlyKept.has(queryId)) return;
    this.recentlyKept.set(queryId, true);
    await this.leases.extend(session, queryId, this.leaseTtlMs);
  }

  /** A streamed chunk of the reply went out, and it was not the run's last event. */
  streamed(queryId: string): Promise<void> {
    return this.streamedFlag.set(queryId);
  }

  /** Whether a chunk of the reply already streamed: a notice then goes out as a chunk update. */
  hasStreamed(queryId: string): Promise<boolean> {
    return this.streamedFlag.get(queryId);
  }

  /** The reply cannot go out at all (its bot or pipeline is gone): the session is freed for its next message. */
  abandon(session: SessionRef, queryId: string): Promise<boolean> {
    this.recentlyKept.delete(queryId);
    return this.leases.release(session, queryId);
  }
}
