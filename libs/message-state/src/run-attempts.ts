import { TraceFlags, type SpanContext } from '@opentelemetry/api';
import { redisKeys, type RedisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';
import { ScriptResultError } from './results.js';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['run-next-attempt'] as const);

/**
 * Longer than any run with all its redeliveries. Where one server holds every slot the counter goes
 * sooner: the script that stores the reply's last event deletes it (see `runAttemptKeys`).
 */
const ATTEMPTS_TTL_MS = 24 * 3600_000;

/**
 * How long a traced attempt's span is kept for the next attempt to link to: longer than a run's
 * redeliveries stretch (max deliver × ack wait, with backoff). Only traced attempts keep one, and it
 * goes with the counter.
 */
const SPAN_TTL_MS = 6 * 3600_000;

/**
 * What `run-next-attempt` keeps for a query's run: its attempt counter and its latest traced attempt's
 * span. The reply's ending script (`reply-deliver-ending`, `reply-enqueue-ending`) deletes both with the
 * session's turn, so a finished query holds neither for its TTL; on a Redis Cluster they are in another
 * slot than the reply and expire instead.
 */
export function runAttemptKeys(keys: RedisKeys, queryId: string): [counter: string, span: string] {
  return [keys.runAttempts(queryId), keys.runAttemptSpan(queryId)];
}

/** An attempt just started: its number and the span of the latest traced attempt before it. */
export interface RunAttemptStart {
  attempt: number;
  previous?: SpanContext;
}

function encodeSpan(span: SpanContext): string {
  return `${span.traceId}:${span.spanId}:${span.traceFlags}`;
}

function decodeSpan(value: string): SpanContext | undefined {
  const [traceId, spanId, flags] = value.split(':');
  if (!traceId || !spanId) return undefined;
  return { traceId, spanId, traceFlags: Number(flags) || TraceFlags.NONE, isRemote: true };
}

/**
 * Attempt numbers of a query's run. The dispatcher keeps the events of the newest attempt and refuses
 * older ones, so the number must rise with every start. JetStream's delivery count is not that number:
 * on nats-server 2.9 it can go back after repeated kills, and a newer attempt numbered lower would have
 * its whole reply refused. A counter in the same Redis as the reply state rises with every start (and
 * when Redis loses it, the reply state it guards is lost with it).
 *
 * The same call keeps a traced attempt's span and hands back the one before, so a run restarted on
 * another replica after its runner died links to the attempt that died.
 */
export class RunAttempts {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = redisKeys(prefix);
  }

  /**
   * Starts the query's next attempt: its number (1, 2, 3, …) and the latest traced earlier attempt's
   * span. `span` is this attempt's, kept for the next one when it is sampled (a link to a span the
   * sampler dropped leads nowhere).
   */
  async start(queryId: string, span?: SpanContext): Promise<RunAttemptStart> {
    const kept = span && (span.traceFlags & TraceFlags.SAMPLED) !== 0 ? encodeSpan(span) : '';
    const reply = await scripts['run-next-attempt'].run(this.redis, runAttemptKeys(this.keys, queryId), [ATTEMPTS_TTL_MS, kept, SPAN_TTL_MS]);
    const [attempt, previous] = Array.isArray(reply) ? reply : [];
    if (!Number.isInteger(attempt) || typeof previous !== 'string') throw new ScriptResultError('run-next-attempt', reply);
    const start: RunAttemptStart = { attempt: Number(attempt) };
    const earlier = previous ? decodeSpan(previous) : undefined;
    return earlier ? { ...start, previous: earlier } : start;
  }

  /** The next attempt number of the query's run: 1, 2, 3, … */
  async next(queryId: string): Promise<number> {
    return (await this.start(queryId)).attempt;
  }
}
