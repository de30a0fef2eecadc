import { redisKeys } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';

/** One plugin call as the calling service saw it. */
export interface PluginCallSample {
  plugin: string;
  ok: boolean;
  ms: number;
}

/** A plugin's calls over a window: how many, how many failed (any result but ok), their mean time. */
export interface PluginCallSummary {
  calls: number;
  errors: number;
  meanMs: number | null;
}

const MINUTE_MS = 60_000;
/** Minutes a bucket is kept: the longest window read, and some. */
const KEEP_SECONDS = 2 * 60 * 60;
/** Plugins one process remembers between flushes; a registry holds at most 256 anyway. */
const MAX_PENDING_PLUGINS = 512;
const SEP = '\u0000';

/**
 * Plugin calls counted cluster-wide in Redis, per minute, for the console's plugin list: each service
 * that calls plugins adds its counts every few seconds in one pipeline (never on a call's path), and the
 * admin sums the buckets of the last hour. Counts are approximate by design: a process killed between
 * flushes loses its last few seconds.
 */
export class PluginCallStats {
  private readonly keys: ReturnType<typeof redisKeys>;
  private pending = new Map<string, { minute: number; calls: number; errors: number; ms: number }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly redis: RedisClient, prefix: string, private readonly now: () => number = Date.now) {
    this.keys = redisKeys(prefix);
  }

  record(sample: PluginCallSample): void {
    const minute = Math.floor(this.now() / MINUTE_MS);
    const key = `${minute}${SEP}${sample.plugin}`;
    let entry = this.pending.get(key);
    if (!entry) {
      if (this.pending.size >= MAX_PENDING_PLUGINS) return;
      entry = { minute, calls: 0, errors: 0, ms: 0 };
      this.pending.set(key, entry);
    }
    entry.calls += 1;
    if (!sample.ok) entry.errors += 1;
    entry.ms += Math.max(0, Math.round(sample.ms));
  }

  /** Adds what was recorded since the last flush; a Redis failure drops those counts (they are statistics). */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const multi = this.redis.multi();
    for (const [key, e] of batch) {
      const plugin = key.slice(key.indexOf(SEP) + 1);
      const bucket = this.keys.pluginCallStats(e.minute);
      multi.hincrby(bucket, `${plugin}${SEP}calls`, e.calls);
      if (e.errors) multi.hincrby(bucket, `${plugin}${SEP}errors`, e.errors);
      multi.hincrby(bucket, `${plugin}${SEP}ms`, e.ms);
      multi.expire(bucket, KEEP_SECONDS);
    }
    await multi.exec();
  }

  /** Flushes every `intervalMs` until `stop`. */
  start(intervalMs = 5_000, onError: (err: unknown) => void = () => undefined): void {
    this.timer ??= setInterval(() => void this.flush().catch(onError), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush().catch(() => undefined);
  }

  /** Each plugin's calls over the last `minutes` (the current minute included). */
  async summary(minutes = 60): Promise<Map<string, PluginCallSummary>> {
    const current = Math.floor(this.now() / MINUTE_MS);
    const pipeline = this.redis.pipeline();
    for (let m = current - minutes + 1; m <= current; m++) pipeline.hgetall(this.keys.pluginCallStats(m));
    const totals = new Map<string, { calls: number; errors: number; ms: number }>();
    for (const [err, hash] of (await pipeline.exec()) ?? []) {
      if (err || !hash) continue;
      for (const [field, value] of Object.entries(hash as Record<string, string>)) {
        const at = field.lastIndexOf(SEP);
        const plugin = field.slice(0, at);
        const counter = field.slice(at + 1) as 'calls' | 'errors' | 'ms';
        const t = totals.get(plugin) ?? { calls: 0, errors: 0, ms: 0 };
        if (counter in t) t[counter] += Number(value);
        totals.set(plugin, t);
      }
    }
    return new Map([...totals].map(([plugin, t]) => [plugin, { calls: t.calls, errors: t.errors, meanMs: t.calls ? Math.round(t.ms / t.calls) : null }]));
  }
}
