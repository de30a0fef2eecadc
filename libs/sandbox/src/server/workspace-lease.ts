import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { redisKeys, type RedisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';

const scripts = loadScripts(new URL('../../lua/', import.meta.url), ['lease-renew', 'lease-release'] as const);

/** Another call held the workspace for longer than this call would wait. */
export class WorkspaceBusyError extends Error {
  readonly code = 'busy';
}

export interface WorkspaceLeaseOptions {
  /** Time to live of a lease: a replica killed mid-call holds its workspace no longer than this. */
  ttlMs?: number;
  /** How long a call waits for a workspace another call holds. */
  waitMs?: number;
}

/**
 * The one owner of a workspace's lease: at most one call works in a workspace at a time, on any
 * replica (SET NX PX with a token of this call). The holder renews it every third of its time to live
 * while the call runs, so a long command keeps it and a killed replica loses it within one TTL.
 */
export class WorkspaceLeases {
  private readonly keys: RedisKeys;
  private readonly ttlMs: number;
  private readonly waitMs: number;

  constructor(private readonly redis: RedisClient, prefix: string, o: WorkspaceLeaseOptions = {}) {
    this.keys = redisKeys(prefix);
    this.ttlMs = o.ttlMs ?? 10_000;
    this.waitMs = o.waitMs ?? 60_000;
  }

  /** Runs `work` holding the workspace's lease; throws WorkspaceBusyError when it cannot be had in time. */
  async holding<T>(workspaceId: string, work: (lost: AbortSignal) => Promise<T>): Promise<T> {
    const key = this.keys.sandboxWorkspaceLease(workspaceId);
    const token = randomUUID();
    await this.acquire(key, token);
    const lost = new AbortController();
    const renew = setInterval(() => {
      scripts['lease-renew'].run(this.redis, [key], [token, this.ttlMs]).then(
        (held) => held === 1 || lost.abort(new WorkspaceBusyError('the workspace lease was lost (Redis was unreachable for longer than its time to live)')),
        () => undefined,
      );
    }, Math.max(250, Math.floor(this.ttlMs / 3)));
    try {
      return await work(lost.signal);
    } finally {
      clearInterval(renew);
      await scripts['lease-release'].run(this.redis, [key], [token]).catch(() => undefined);
    }
  }

  private async acquire(key: string, token: string): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
      if ((await this.redis.set(key, token, 'PX', this.ttlMs, 'NX')) === 'OK') return;
      if (Date.now() + pause > deadline) throw new WorkspaceBusyError(`another call has held this workspace for more than ${Math.round(this.waitMs / 1000)} s`);
      await sleep(pause);
    }
  }
}
