import { redisKeys } from '@conveyor/contracts';
import type { ConnectionState, ConnectionStateSchema } from '@conveyor/platform-kit';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';
import { LeaseLostError, type ConnectionLease } from './lease.js';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['state-write'] as const);

/**
 * Largest connection state, as JSON bytes: it holds a session handle and a cursor (Discord's is about
 * 150 bytes), never messages, and every holder of the bot reads it whole when it connects.
 */
export const MAX_CONNECTION_STATE_BYTES = 4 * 1024;

/** A connection state over MAX_CONNECTION_STATE_BYTES was refused; nothing was written. Recognised by `code`. */
export class ConnectionStateTooLargeError extends Error {
  readonly code = 'CONNECTION_STATE_TOO_LARGE';

  constructor(readonly botId: string, readonly bytes: number) {
    super(`the connection state of bot ${botId} is ${bytes} bytes, over the bound of ${MAX_CONNECTION_STATE_BYTES}`);
    this.name = 'ConnectionStateTooLargeError';
  }
}

export interface ConnectionStateStoreOptions<S> {
  redis: RedisClient;
  prefix: string;
  /** The lease of the bot: writes carry its fencing token and are refused once it is not held. */
  lease: ConnectionLease;
  /** The platform's shape of the state; what Redis holds is parsed with it on every read. */
  schema: ConnectionStateSchema<S>;
  /** A stored value that is no JSON or not what the schema accepts (read as nothing), for the gateway's log and metrics. */
  onInvalid?(reason: string): void;
  /** A write or removal that failed (refused for a stale token, over the bound, Redis unreachable), for the gateway's metrics. */
  onWriteFailed?(err: unknown): void;
}

/**
 * The state a bot's held connection keeps in Redis for the replica holding the bot next (see
 * ConnectionState in platform-kit). A write runs one script that checks the lease holds this
 * replica's fencing token and writes in the same step, so a stale holder writes nothing. The state
 * expires the lease TTL plus CONNECTION_STATE_GRACE_MS after its last write, and each lease renewal
 * extends it likewise, so it stays while the bot is held and survives the holder's death for a while.
 */
export class ConnectionStateStore<S> implements ConnectionState<S> {
  private readonly key: string;
  private readonly leaseKey: string;

  constructor(private readonly o: ConnectionStateStoreOptions<S>) {
    const keys = redisKeys(o.prefix);
    this.key = keys.connectionState(o.lease.botId);
    this.leaseKey = keys.connectionLease(o.lease.botId);
  }

  async get(): Promise<S | undefined> {
    const raw = await this.o.redis.get(this.key);
    if (raw === null) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      this.o.onInvalid?.('stored connection state is not JSON');
      return undefined;
    }
    const parsed = this.o.schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      this.o.onInvalid?.(`stored connection state: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
      return undefined;
    }
    return parsed.data;
  }

  async put(value: S): Promise<void> {
    const json = JSON.stringify(value);
    const bytes = Buffer.byteLength(json);
    await this.reported(async () => {
      if (bytes > MAX_CONNECTION_STATE_BYTES) throw new ConnectionStateTooLargeError(this.o.lease.botId, bytes);
      await this.write(json);
    });
  }

  clear(): Promise<void> {
    return this.reported(() => this.write(''));
  }

  private async reported(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.o.onWriteFailed?.(err);
      throw err;
    }
  }

  private async write(json: string): Promise<void> {
    const holder = this.o.lease.holder;
    const token = this.o.lease.token;
    if (holder === null) throw new LeaseLostError(this.o.lease.botId, null);
    const written = Number(await scripts['state-write'].run(this.o.redis, [this.leaseKey, this.key], [holder, json, this.o.lease.stateTtlMs]));
    if (written !== 1) {
      // The lease moved on: this replica must stop acting for the bot, as after a failed fencing check.
      if (this.o.lease.holder === holder) this.o.lease.drop();
      throw new LeaseLostError(this.o.lease.botId, token);
    }
  }
}
