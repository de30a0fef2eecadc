import type { SandboxWorkspaceStore } from '@conveyor/persistence';
import type { Logger } from '@conveyor/telemetry';
import { sandboxMetrics } from '../metrics.js';

export interface WorkspaceExpiryOptions {
  store: SandboxWorkspaceStore;
  logger: Logger;
  /** A workspace unused this long is deleted. */
  idleMs: number;
  /** Time between sweeps (jittered by up to a fifth, so replicas do not sweep together). */
  everyMs?: number;
}

/**
 * Deletes idle workspaces. Every replica sweeps; a sweep is one bounded DELETE, idempotent, so two
 * replicas sweeping at once only find less to do.
 */
export class WorkspaceExpiry {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: WorkspaceExpiryOptions) {}

  start(): void {
    const every = this.o.everyMs ?? 10 * 60_000;
    const schedule = () => {
      this.timer = setTimeout(() => void this.sweep().finally(schedule), every * (0.8 + Math.random() * 0.4));
      this.timer.unref();
    };
    schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  async sweep(): Promise<string[]> {
    try {
      const expired = await this.o.store.expire(new Date(Date.now() - this.o.idleMs));
      if (expired.length > 0) {
        sandboxMetrics().expired.add(expired.length);
        this.o.logger.info({ workspaces: expired.length }, 'idle sandbox workspaces deleted');
      }
      return expired;
    } catch (err) {
      this.o.logger.warn({ err }, 'sandbox workspace expiry failed; trying again at the next sweep');
      return [];
    }
  }
}
