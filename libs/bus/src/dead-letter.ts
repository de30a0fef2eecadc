import { DeadLetter, LIMITS, type StreamSpec } from '@conveyor/contracts';
import type { JetStreamClient, PubAck } from '@nats-io/jetstream';
import type { BusPublisher } from './publish.js';

export type DeadLetterReason = DeadLetter['reason'];

export interface DeadLetterInput {
  /** The consumer that gave up, e.g. `orchestrator`. */
  source: string;
  stream: string;
  subject: string;
  deliveryCount: number;
  reason: DeadLetterReason;
  error: string;
  /** The offending message's raw bytes. */
  data: Uint8Array;
  traceId?: string;
}

const MAX_ERROR_CHARS = 10_000;

/** A DeadLetter message: the raw payload cut to LIMITS.deadLetterPayloadBytes (then base64), the error cut to fit. */
export function buildDeadLetter(input: DeadLetterInput, now: Date = new Date()): DeadLetter {
  const limit = LIMITS.deadLetterPayloadBytes;
  const kept = input.data.byteLength > limit ? input.data.subarray(0, limit) : input.data;
  const error = input.error.length > MAX_ERROR_CHARS ? input.error.slice(0, MAX_ERROR_CHARS - 1) + '…' : input.error;
  return {
    v: 1,
    source: input.source,
    stream: input.stream,
    subject: input.subject,
    deliveryCount: input.deliveryCount,
    reason: input.reason,
    error,
    payloadBase64: Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength).toString('base64'),
    payloadTruncated: kept.byteLength < input.data.byteLength,
    ...(input.traceId ? { traceId: input.traceId } : {}),
    failedAt: now.toISOString(),
  };
}

/** The raw bytes a dead letter kept. */
export function deadLetterPayload(dl: DeadLetter): Buffer {
  return Buffer.from(dl.payloadBase64, 'base64');
}

/**
 * Publishes a dead letter. The de-duplication id is derived from the original message's stream position,
 * so a dead letter published twice (the term after it was lost, the message came back) is stored once.
 */
export function publishDeadLetter(
  publisher: BusPublisher,
  deadLetterSubject: string,
  input: DeadLetterInput & { streamSequence: number; queryId?: string },
): Promise<PubAck> {
  return publisher.publish(deadLetterSubject, DeadLetter, buildDeadLetter(input), {
    msgId: `dlq:${input.stream}:${input.streamSequence}`,
    schemaName: 'DeadLetter/1',
    ...(input.queryId ? { queryId: input.queryId } : {}),
  });
}

/**
 * Reads every dead letter currently stored under `subject` (wildcards allowed) in the dead-letter
 * stream, oldest first, with an ordered (ephemeral, ack-less) consumer: reading removes nothing.
 * For tests and operator tools. Entries that do not parse as DeadLetter are skipped.
 */
export async function readDeadLetters(
  js: JetStreamClient,
  stream: StreamSpec | string,
  subject: string,
  opts: { waitMs?: number } = {},
): Promise<DeadLetter[]> {
  const name = typeof stream === 'string' ? stream : stream.name;
  const jsm = await js.jetstreamManager();
  const info = await jsm.streams.info(name, { subjects_filter: subject });
  const count = Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  if (count === 0) return [];
  const consumer = await js.consumers.get(name, { filter_subjects: subject });
  const out: DeadLetter[] = [];
  const messages = await consumer.fetch({ max_messages: count, expires: opts.waitMs ?? 2_000 });
  for await (const m of messages) {
    const parsed = DeadLetter.safeParse(safeJson(m.string()));
    if (parsed.success) out.push(parsed.data);
    if (m.info.pending === 0) break;
  }
  return out;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
