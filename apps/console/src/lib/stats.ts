// The dashboard's figures, computed from query log entries in the browser.
import type { AdminApi } from '@conveyor/contracts';

export interface DashboardStats {
  /** Received queries per minute, oldest minute first; the last bucket is the current minute. */
  perMinute: { minute: number; count: number }[];
  total: number;
  succeeded: number;
  failed: number;
  inFlight: number;
  /** 95th percentile of receivedAt → finishedAt of finished queries, ms; null with none finished. */
  p95LatencyMs: number | null;
  medianLatencyMs: number | null;
}

const MINUTE = 60_000;

/** Nearest-rank percentile of a sorted list. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function dashboardStats(entries: readonly AdminApi.QueryLogEntry[], now: number, minutes: number): DashboardStats {
  const currentMinute = Math.floor(now / MINUTE);
  const first = currentMinute - minutes + 1;
  const perMinute = Array.from({ length: minutes }, (_, i) => ({ minute: (first + i) * MINUTE, count: 0 }));
  const latencies: number[] = [];
  let succeeded = 0;
  let failed = 0;
  let inFlight = 0;
  let total = 0;
  for (const e of entries) {
    const received = Date.parse(e.receivedAt);
    const bucket = Math.floor(received / MINUTE) - first;
    if (bucket < 0 || bucket >= minutes) continue;
    total++;
    perMinute[bucket].count++;
    if (e.status === 'succeeded') succeeded++;
    else if (e.status === 'failed') failed++;
    else inFlight++;
    if (e.finishedAt && e.status === 'succeeded') latencies.push(Date.parse(e.finishedAt) - received);
  }
  latencies.sort((a, b) => a - b);
  return { perMinute, total, succeeded, failed, inFlight, p95LatencyMs: percentile(latencies, 95), medianLatencyMs: percentile(latencies, 50) };
}

/** One step of a query's timeline; the page words it in the reader's language. */
export type TimelineStep =
  | { step: 'received' | 'started'; at: string; offsetMs: number }
  | { step: 'finished'; at: string; offsetMs: number; status: string }
  | { step: 'failed'; at: string; offsetMs: number; error: string | null };

/** A query's steps for its timeline, each with the time since it was received. */
export function queryTimeline(e: AdminApi.QueryLogEntry): TimelineStep[] {
  const received = Date.parse(e.receivedAt);
  const steps: TimelineStep[] = [{ step: 'received', at: e.receivedAt, offsetMs: 0 }];
  if (e.startedAt) steps.push({ step: 'started', at: e.startedAt, offsetMs: Date.parse(e.startedAt) - received });
  if (e.finishedAt) {
    const offsetMs = Date.parse(e.finishedAt) - received;
    steps.push(e.status === 'failed' ? { step: 'failed', at: e.finishedAt, offsetMs, error: e.error } : { step: 'finished', at: e.finishedAt, offsetMs, status: e.status });
  }
  return steps;
}
