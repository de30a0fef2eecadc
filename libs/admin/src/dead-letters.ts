// Dead letters as the console handles them: listed from the dead-letter stream by sequence (reading
// removes nothing), resubmitted to the subject they failed on (then removed), or discarded.
import { DeadLetter, type AdminApi, type StreamSpec } from '@conveyor/contracts';
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import { AdminApiError } from './errors.js';
import type { Paged } from './config-store.js';

/** How many sequence numbers one page may probe (deleted or filtered-out entries are skipped). */
const MAX_PROBES_PER_PAGE = 2_000;

export class DeadLetters {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly stream: StreamSpec,
  ) {}

  async list(filter: { limit: number; cursor?: string; source?: string }): Promise<Paged<AdminApi.DeadLetterEntry>> {
    const after = filter.cursor === undefined ? 0 : cursorSeq(filter.cursor);
    const info = await this.jsm.streams.info(this.stream.name);
    const items: AdminApi.DeadLetterEntry[] = [];
    let seq = Math.max(after + 1, info.state.first_seq);
    let probes = 0;
    for (; seq <= info.state.last_seq && items.length < filter.limit && probes < MAX_PROBES_PER_PAGE; seq++, probes++) {
      const entry = await this.read(seq);
      if (entry && (!filter.source || entry.source === filter.source)) items.push(entry);
    }
    const more = seq <= info.state.last_seq;
    return { items, nextCursor: more ? String(seq - 1) : null };
  }

  async get(seq: number): Promise<AdminApi.DeadLetterEntry> {
    const entry = await this.read(seq);
    if (!entry) throw AdminApiError.notFound('dead letter', String(seq));
    return entry;
  }

  /**
   * Publishes the kept payload to the subject it failed on, then removes the dead letter. The
   * de-duplication id is the dead letter's sequence, so two resubmits of one entry publish once.
   */
  async resubmit(seq: number, headers?: MsgHdrs): Promise<AdminApi.DeadLetterResubmitted> {
    const entry = await this.get(seq);
    if (entry.payloadTruncated) {
      throw new AdminApiError('conflict', `dead letter ${seq} kept only the start of its payload; it cannot be resubmitted, only discarded`, { field: 'path.seq' });
    }
    const ack = await this.js.publish(entry.subject, Buffer.from(entry.payloadBase64, 'base64'), { msgID: `resubmit:${this.stream.name}:${seq}`, ...(headers ? { headers } : {}) });
    await this.discard(seq);
    return { seq, subject: entry.subject, streamSeq: ack.seq };
  }

  async discard(seq: number): Promise<void> {
    try {
      await this.jsm.streams.deleteMessage(this.stream.name, seq, false);
    } catch (err) {
      if (isNoMessage(err)) throw AdminApiError.notFound('dead letter', String(seq));
      throw err;
    }
  }

  /**
   * Retention: deletes up to `limit` dead letters stored before `cutoff`, oldest first, through the
   * same message API the console's discard uses (the admin's NATS user may not purge or reconfigure
   * the stream). Entries are appended in time order, so the first younger one ends the batch.
   */
  async pruneOlderThan(cutoff: Date, limit: number): Promise<number> {
    const info = await this.jsm.streams.info(this.stream.name);
    let deleted = 0;
    // Discarded entries leave gaps in the sequence; probing is bounded like a page's.
    for (let seq = info.state.first_seq, probes = 0; seq <= info.state.last_seq && deleted < limit && probes < limit + MAX_PROBES_PER_PAGE; seq++, probes++) {
      let message;
      try {
        message = await this.jsm.streams.getMessage(this.stream.name, { seq });
      } catch (err) {
        if (isNoMessage(err)) continue;
        throw err;
      }
      if (!message) continue;
      if (message.time.getTime() >= cutoff.getTime()) break;
      try {
        await this.jsm.streams.deleteMessage(this.stream.name, seq, false);
        deleted++;
      } catch (err) {
        // Discarded or resubmitted from the console meanwhile.
        if (!isNoMessage(err)) throw err;
      }
    }
    return deleted;
  }

  private async read(seq: number): Promise<AdminApi.DeadLetterEntry | undefined> {
    let message;
    try {
      message = await this.jsm.streams.getMessage(this.stream.name, { seq });
    } catch (err) {
      if (isNoMessage(err)) return undefined;
      throw err;
    }
    if (!message) return undefined;
    let raw: unknown;
    try {
      raw = message.json();
    } catch {
      return undefined;
    }
    const parsed = DeadLetter.safeParse(raw);
    if (!parsed.success) return undefined;
    const { v: _v, ...rest } = parsed.data;
    return { seq, ...rest };
  }
}

function cursorSeq(cursor: string): number {
  if (!/^\d{1,15}$/.test(cursor)) throw AdminApiError.invalid('query.cursor', 'is not a cursor this API returned');
  return Number(cursor);
}

/** JetStream's "no message found", recognised by its code. */
function isNoMessage(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound;
}
