// A query's timeline as the query detail shows it, from its log entry (the dashboard's figures come
// from the admin service's monitoring routes).
import type { AdminApi } from '@conveyor/contracts';

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
