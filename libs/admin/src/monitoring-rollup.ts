// The query log's hourly rollup folded on a timer in the admin service. The trigger appends deltas on
// every query record write; folding them keeps the delta table small (readers add the unfolded ones,
// so a summary is exact between two folds too). Several admin replicas may run it; the fold's lock
// lets one fold at a time, the others skip that round.
import { foldAllRollupDeltas, type Database } from '@conveyor/persistence';
import type { RetentionLogger } from './retention.js';

export interface RollupSchedule {
  intervalMs: number;
  /** Deltas one fold transaction takes at most. */
  batchSize: number;
  /** Fold transactions one round takes at most; what is left waits for the next round. */
  maxBatches: number;
}

export const DEFAULT_ROLLUP_SCHEDULE: RollupSchedule = { intervalMs: 5_000, batchSize: 10_000, maxBatches: 50 };

export interface RunningRollup {
  stop(): Promise<void>;
}

export function startRollupFolding(pool: Database['pool'], schedule: RollupSchedule, logger: RetentionLogger): RunningRollup {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let failing = false;
  const round = async () => {
    try {
      const result = await foldAllRollupDeltas(pool, schedule.batchSize, schedule.maxBatches);
      if (failing) logger.info({ folded: result.folded }, 'monitoring rollup: folding works again');
      failing = false;
      if (result.more && !result.contended) logger.info({ folded: result.folded }, 'monitoring rollup: a backlog of query log changes is being folded; the rest next round');
    } catch (err) {
      // Readers add unfolded deltas themselves, so a failed round costs only read time until the next one.
      if (!failing) logger.warn({ err }, 'monitoring rollup: folding failed; the next round tries again');
      failing = true;
    }
  };
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = round().finally(() => {
        running = undefined;
        next();
      });
    }, schedule.intervalMs);
    timer.unref();
  };
  next();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
