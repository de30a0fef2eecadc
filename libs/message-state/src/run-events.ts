import type { z } from 'zod';
import { RunnerEvent, type ReplyRoute, type RunnerEventBody, type Topology } from '@conveyor/contracts';
import type { PublishPort } from './publish-port.js';

/** What the publisher needs of the service: the bus and its subjects. */
export interface RunEventsDeps {
  publisher: PublishPort;
  topology: Pick<Topology, 'subjects'>;
}

/** How long an event publish keeps trying through a broker outage (same dedup id each time). */
export const EVENT_PUBLISH_RETRY_MS = 120_000;

/**
 * Who publishes a query's events. The runner numbers a run's events by its attempt (from
 * `RunAttempts`); the orchestrator's (notices and command replies of a query that never reached a
 * runner) are numbered by the query's delivery and kept in an id space of their own, so the two can
 * never share a dedup id.
 */
export type EventSource = 'runner' | 'orchestrator';

/** The number an event gets: its attempt and its place in the attempt. */
export interface EventNumber {
  attempt: number;
  seq: number;
}

/**
 * The kinds whose schema bounds text that comes from outside (a provider's error, a notice, a command's
 * or a plugin's reply): checked before they leave, so an oversize one fails where it was made. The rest
 * (chunks, messages, tool results, `done`: one per streamed snapshot) are typed and bounded only by the
 * payload's size, and the dispatcher's decode validates them.
 */
const BOUNDED_KINDS: ReadonlySet<RunnerEventBody['kind']> = new Set(['error', 'notice', 'command_reply', 'plugin_reply']);

/**
 * The one publisher of `RunnerEvent`: numbers a query's events (attempt, then seq from `firstSeq`),
 * gives each its dedup id and publishes it to the events stream, riding out a broker restart (a
 * reply's later events depend on this one, so a gap must not be left). An instance belongs to one
 * attempt of one query; events go out in the order `emit` is called.
 */
export class RunEvents {
  private seq: number;
  private readonly firstSeq: number;

  constructor(
    private readonly infra: RunEventsDeps,
    private readonly query: { queryId: string; route: ReplyRoute },
    readonly attempt: number,
    private readonly source: EventSource,
    firstSeq = 0,
  ) {
    this.seq = this.firstSeq = firstSeq;
  }

  /** Events this instance published (or is publishing); a reply that got any must end with `done`. */
  get emitted(): number {
    return this.seq - this.firstSeq;
  }

  /** The number the next event will have. */
  next(): EventNumber {
    return { attempt: this.attempt, seq: this.seq };
  }

  async emit(body: RunnerEventBody): Promise<void> {
    const seq = this.seq++;
    const { queryId, route } = this.query;
    const event: z.input<typeof RunnerEvent> = { v: 1, queryId, route, attempt: this.attempt, seq, ...body };
    const space = this.source === 'orchestrator' ? 'orch:' : '';
    await this.infra.publisher.publish(this.infra.topology.subjects.event(route.botId), RunnerEvent, event, {
      msgId: `evt:${queryId}:${space}${this.attempt}:${seq}`,
      queryId,
      retryForMs: EVENT_PUBLISH_RETRY_MS,
      validate: BOUNDED_KINDS.has(body.kind),
    });
  }
}
