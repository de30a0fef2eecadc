import { context, ROOT_CONTEXT, trace, type Context, type Link } from '@opentelemetry/api';
import { GroupCommitFullError } from './group-commit.js';

export interface WriteBatcherOptions<T, R> {
  /** Writes one batch in one statement and returns each item's result, in the items' order. */
  writeBatch: (items: T[]) => Promise<R[]>;
  /** Items sharing a key never share a batch: the later one waits for the next, in arrival order. */
  keysOf: (item: T) => readonly string[];
  /** The span a batch of several items is written in; it links to each item's caller. */
  spanName: string;
  maxBatch?: number;
  /** Items waiting beyond this are refused (write rejects), so a stalled database cannot grow memory without bound. */
  maxPending?: number;
}

const tracer = trace.getTracer('@conveyor/persistence');

interface Waiting<T, R> {
  item: T;
  /** The caller's context: a batch of one is written in it, a batch of several links to it. */
  caller: Context;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for writes whose callers wait for their own result: a write made while none is in
 * flight goes out at once, alone (no added latency one at a time), and the writes that arrive while
 * it is in flight leave together as the next batch. One batch at a time, in arrival order. A batch
 * that fails is written again item by item, so one bad item fails alone and every caller gets its
 * own outcome.
 */
export class WriteBatcher<T, R> {
  private queue: Waiting<T, R>[] = [];
  private writing = false;
  private readonly maxBatch: number;
  private readonly maxPending: number;

  constructor(private readonly o: WriteBatcherOptions<T, R>) {
    this.maxBatch = o.maxBatch ?? 256;
    this.maxPending = o.maxPending ?? 10_000;
  }

  write(item: T): Promise<R> {
    if (this.queue.length >= this.maxPending) return Promise.reject(new GroupCommitFullError(`${this.queue.length} writes waiting for the database`));
    const result = new Promise<R>((resolve, reject) => this.queue.push({ item, caller: context.active(), resolve, reject }));
    if (!this.writing) void this.drain();
    return result;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length) await this.writeOut(this.nextBatch());
    } finally {
      this.writing = false;
    }
  }

  /** The oldest waiting items, up to maxBatch, skipping (and keeping in order) those whose key an earlier one holds. */
  private nextBatch(): Waiting<T, R>[] {
    const batch: Waiting<T, R>[] = [];
    const rest: Waiting<T, R>[] = [];
    const held = new Set<string>();
    for (const w of this.queue) {
      const keys = this.o.keysOf(w.item);
      const free = batch.length < this.maxBatch && !keys.some((k) => held.has(k));
      for (const k of keys) held.add(k);
      (free ? batch : rest).push(w);
    }
    this.queue = rest;
    return batch;
  }

  private async writeOut(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.inSpan(batch, () => this.o.writeBatch(batch.map((w) => w.item)));
      batch.forEach((w, i) => w.resolve(results[i]!));
      return;
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
    }
    for (const w of batch) {
      try {
        const [result] = await this.inSpan([w], () => this.o.writeBatch([w.item]));
        w.resolve(result!);
      } catch (err) {
        w.reject(err);
      }
    }
  }

  /**
   * A write of one item belongs to its caller's trace. A batch belongs to no single caller, so it gets
   * a span of its own (a root) linked to each caller's span; its database span nests under it.
   */
  private inSpan<V>(batch: Waiting<T, R>[], write: () => Promise<V>): Promise<V> {
    if (batch.length === 1) return context.with(batch[0]!.caller, write);
    const links: Link[] = [];
    for (const w of batch) {
      const span = trace.getSpan(w.caller);
      if (span) links.push({ context: span.spanContext() });
    }
    return tracer.startActiveSpan(this.o.spanName, { root: true, links, attributes: { 'conveyor.batch.size': batch.length } }, ROOT_CONTEXT, async (span) => {
      try {
        return await write();
      } finally {
        span.end();
      }
    });
  }
}
