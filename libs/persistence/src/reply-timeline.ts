import type { StageTiming } from './query-log.js';

/** Where the delivery steps go: QueryLog.timeline (group-committed with the query's other entries). */
export interface TimelineSink {
  timeline(id: string, stages: StageTiming[]): void;
}

/** Queries with a reply under way that one process remembers at most; the oldest is forgotten first. */
const MAX_OPEN_REPLIES = 10_000;
/** Replies of one query that get a step of their own; later ones are not timed (the timeline is bounded). */
const MAX_TIMED_REPLIES = 8;

interface OpenReply {
  attempt: number;
  /** When this process began sending the reply (its first part). */
  startedAt: number;
  /** Replies of the query (of this attempt) already ended. */
  ended: number;
}

/**
 * The dispatcher's delivery on a query's timeline: one step per reply, from the start of the reply's
 * first send to the end of its last (a streamed reply's many chunk sends make one step), written once
 * when the reply ends, through the query log's group commit: no statement per chunk. Steps are named
 * `deliver <adapter>`, then `deliver <adapter> (2)` and so on for a query's later replies, so a
 * redelivered run's replies replace the first attempt's (the query log merges steps by name).
 *
 * Kept in memory per process: when the events of one reply are handled by two dispatcher replicas, the
 * step covers the part the replica sending the reply's end handled.
 */
export class ReplyTimeline {
  private readonly open = new Map<string, OpenReply>();

  constructor(private readonly sink: TimelineSink, private readonly now: () => number = Date.now) {}

  /** Before a send of the query's reply. */
  sending(queryId: string, attempt: number): void {
    const reply = this.open.get(queryId);
    if (reply && reply.attempt === attempt && reply.startedAt >= 0) return;
    if (reply && reply.attempt === attempt) {
      reply.startedAt = this.now();
      return;
    }
    // A new query, or a newer attempt of it: its replies are counted anew.
    this.open.delete(queryId);
    this.open.set(queryId, { attempt, startedAt: this.now(), ended: 0 });
    if (this.open.size > MAX_OPEN_REPLIES) this.open.delete(this.open.keys().next().value!);
  }

  /** After a send; `endsReply` when it was the reply's last part. */
  sent(queryId: string, attempt: number, adapter: string, endsReply: boolean): void {
    const reply = this.open.get(queryId);
    if (!reply || reply.attempt !== attempt || reply.startedAt < 0 || !endsReply) return;
    const at = reply.startedAt;
    reply.ended++;
    reply.startedAt = -1;
    if (reply.ended > MAX_TIMED_REPLIES) return;
    const stage = reply.ended === 1 ? `deliver ${adapter}` : `deliver ${adapter} (${reply.ended})`;
    this.sink.timeline(queryId, [{ stage, at, ms: Math.max(0, this.now() - at) }]);
  }
}
