import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Link } from '@opentelemetry/api';
import { GroupCommitFullError } from './group-commit.js';

export interface StatementBatcherOptions<T, R> {
  /** Runs one batch as one statement and returns each item's result, in the items' order. */
  runBatch: (items: T[]) => Promise<R[]>;
  /** Items sharing a key never share a batch: the later one waits for the next, in arrival order. */
  keysOf: (item: T) => readonly string[];
  /** The span a batch of several items runs in; it links to each item's caller. */
  spanName: string;
  maxBatch?: number;
  /** Items waiting beyond this are refused (`run` rejects), so a stalled database cannot grow memory without bound. */
  maxPending?: number;
}

const tracer = trace.getTracer('@conveyor/persistence');

interface Waiting<T, R> {
  item: T;
  /** keysOf(item), taken once: an item that waits is looked at again for every batch. */
  keys: readonly string[];
  /** The caller's context: a batch of one runs in it, a batch of several links to it. */
  caller: Context;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for statements whose callers wait for their own result: a call made while no batch is
 * in flight goes out at once, alone (no added latency one at a time), and the calls that arrive while
 * it is in flight leave together as the next batch. One batch at a time, in arrival order. A batch
 * that fails is run again item by item, so one bad item fails alone and every caller gets its own
 * outcome. (GroupCommit is for writes no caller waits for: it holds them a few milliseconds instead.)
 */
export class StatementBatcher<T, R> {
  private queue: Waiting<T, R>[] = [];
  private running = false;
  private readonly maxBatch: number;
  private readonly maxPending: number;

  constructor(private readonly o: StatementBatcherOptions<T, R>) {
    this.maxBatch = o.maxBatch ?? 256;
    this.maxPending = o.maxPending ?? 10_000;
  }

  run(item: T): Promise<R> {
    if (this.queue.length >= this.maxPending) return Promise.reject(new GroupCommitFullError(`${this.queue.length} statements waiting for the database`));
    const result = new Promise<R>((resolve, reject) => this.queue.push({ item, keys: this.o.keysOf(item), caller: context.active(), resolve, reject }));
    if (!this.running) void this.drain();
    return result;
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length) await this.runOut(this.nextBatch());
    } finally {
      this.running = false;
    }
  }

  /** The oldest waiting items, up to maxBatch, skipping (and keeping in order) those whose key an earlier one holds. */
  private nextBatch(): Waiting<T, R>[] {
    const batch: Waiting<T, R>[] = [];
    const rest: Waiting<T, R>[] = [];
    const held = new Set<string>();
    for (const w of this.queue) {
      const free = batch.length < this.maxBatch && !w.keys.some((k) => held.has(k));
      for (const k of w.keys) held.add(k);
      (free ? batch : rest).push(w);
    }
    this.queue = rest;
    return batch;
  }

  private async runOut(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.inSpan(batch, () => this.o.runBatch(batch.map((w) => w.item)));
      batch.forEach((w, i) => w.resolve(results[i]!));
      return;
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
    }
    for (const w of batch) {
      try {
        const [result] = await this.inSpan([w], () => this.o.runBatch([w.item]));
        w.resolve(result!);
      } catch (err) {
        w.reject(err);
      }
    }
  }

  /**
   * A batch of one item belongs to its caller's trace. A batch of several belongs to no single caller,
   * so it gets a span of its own (a root) linked to each caller's span; its database span nests under it.
   */
  private inSpan<V>(batch: Waiting<T, R>[], statement: () => Promise<V>): Promise<V> {
    if (batch.length === 1) return context.with(batch[0]!.caller, statement);
    const links: Link[] = [];
    for (const w of batch) {
      const span = trace.getSpan(w.caller);
      if (span) links.push({ context: span.spanContext() });
    }
    return tracer.startActiveSpan(this.o.spanName, { root: true, links, attributes: { 'conveyor.batch.size': batch.length } }, ROOT_CONTEXT, async (span) => {
      try {
        return await statement();
      } catch (err) {
        // Each caller gets the error (or its own outcome when the items are run again alone) and logs it.
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        throw err;
      } finally {
        span.end();
      }
    });
  }
}
