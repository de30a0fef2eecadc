// Retention in the admin service: the pruner (libs/persistence) run on a timer, one run at a time,
// with a log line per run. Several admin replicas may run it; the pruner's lock lets one work at once.
import { RetentionPruner, type Database, type RetentionPolicy, type RetentionSummary } from '@conveyor/persistence';
import type { DeadLetters } from './dead-letters.js';

export interface RetentionLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface RetentionSchedule {
  policy: RetentionPolicy;
  /** Time between the end of one run and the start of the next. */
  intervalMs: number;
  /** Before the first run, so a starting replica does its start-up work first. */
  firstRunDelayMs: number;
  batchSize: number;
  pauseMs: number;
  maxBatchesPerKind: number;
}

export interface RunningRetention {
  /** Ends the schedule; an ongoing run stops after its current batch. */
  stop(): Promise<void>;
  /** Resolves with the next run's summary (tests, operations). */
  nextRun(): Promise<RetentionSummary>;
}

export function startRetention(pool: Database['pool'], deadLetters: DeadLetters | undefined, schedule: RetentionSchedule, logger: RetentionLogger): RunningRetention {
  const pruner = new RetentionPruner(pool, schedule.policy, {
    batchSize: schedule.batchSize,
    pauseMs: schedule.pauseMs,
    maxBatchesPerKind: schedule.maxBatchesPerKind,
    ...(deadLetters ? { deadLetters: (cutoff, limit) => deadLetters.pruneOlderThan(cutoff, limit) } : {}),
  });
  const abort = new AbortController();
  let waiters: ((s: RetentionSummary) => void)[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const runOnce = async () => {
    try {
      const summary = await pruner.run(abort.signal);
      const total = Object.values(summary.pruned).reduce((a, b) => a + b, 0);
      logger.info(
        { pruned: summary.pruned, batches: summary.batches, contended: summary.contended, unfinished: summary.unfinished, durationMs: summary.durationMs },
        summary.contended
          ? `retention: another admin replica is pruning; this one deleted ${total} and left the rest to it`
          : `retention: deleted ${total} rows and entries past their age in ${summary.batches} batches` + (summary.unfinished.length ? ` (more left of ${summary.unfinished.join(', ')}, next run)` : ''),
      );
      const ready = waiters;
      waiters = [];
      for (const w of ready) w(summary);
    } catch (err) {
      // The next run tries again; what is left only waits longer.
      logger.warn({ err }, 'retention: pruning failed; the next run tries again');
    }
  };
  const scheduleRun = (ms: number) => {
    if (abort.signal.aborted) return;
    timer = setTimeout(() => {
      running = runOnce().finally(() => {
        running = undefined;
        scheduleRun(schedule.intervalMs);
      });
    }, ms);
    timer.unref();
  };
  const policy = schedule.policy;
  if (policy.queryDays > 0 || policy.rollupDays > 0 || policy.conversationDays > 0 || policy.auditDays > 0 || (deadLetters && policy.deadLetterDays > 0)) scheduleRun(schedule.firstRunDelayMs);

  return {
    async stop() {
      abort.abort();
      clearTimeout(timer);
      await running;
    },
    nextRun: () => new Promise((resolve) => waiters.push(resolve)),
  };
}
