import { redisKeys } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['acquire', 'renew', 'release'] as const);

/**
 * How long a connection's state (ConnectionStateStore) outlives the lease: long enough for a replica
 * to take over a bot whose holder died and resume its platform session, short enough that a
 * successor does not try a session the platform has long forgotten (Discord resumes a session only
 * for a limited time; a refused resume falls back to a new session anyway).
 */
export const CONNECTION_STATE_GRACE_MS = 5 * 60_000;

/** Why an owner must stop acting for a bot; recognised by `code`, never by the message. */
export class LeaseLostError extends Error {
  readonly code = 'CONNECTION_LEASE_LOST';

  constructor(readonly botId: string, readonly token: number | null) {
    super(`the connection lease of bot ${botId} is not held (token ${token ?? 'none'})`);
    this.name = 'LeaseLostError';
  }
}

export function isLeaseLost(err: unknown): err is LeaseLostError {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'CONNECTION_LEASE_LOST';
}

export interface ConnectionLeaseOptions {
  redis: RedisClient;
  prefix: string;
  botId: string;
  /** This replica; two owners never share an id. */
  ownerId: string;
  ttlMs: number;
}

/**
 * The one owner object of a bot's connection lease: acquire, renew, release, and the fencing check.
 *
 * Exactly one gateway replica may hold a bot's live connection. The lease has a TTL, so a replica that
 * dies (SIGKILL) frees it by expiry; a draining one releases it at once. Each acquisition gets a
 * fencing token from a counter that only rises: an owner that was paused past its TTL (GC, a stalled
 * event loop, a partition from Redis) still believes it owns the bot, so it checks its token with
 * `check()` right before anything that reaches the bus or the platform, and a stale token stops it.
 */
export class ConnectionLease {
  private held: number | null = null;
  private readonly lease: string;
  private readonly fence: string;
  private readonly state: string;

  constructor(private readonly o: ConnectionLeaseOptions) {
    const keys = redisKeys(o.prefix);
    this.lease = keys.connectionLease(o.botId);
    this.fence = keys.connectionFence(o.botId);
    this.state = keys.connectionState(o.botId);
  }

  get botId(): string {
    return this.o.botId;
  }

  /** The fencing token while held (as far as this replica knows), else null. */
  get token(): number | null {
    return this.held;
  }

  /** The lease's value in Redis while this owner holds it (`<owner>|<token>`), for fenced scripts; else null. */
  get holder(): string | null {
    return this.held === null ? null : this.value(this.held);
  }

  /** How long the connection's state lives past its last write or lease renewal. */
  get stateTtlMs(): number {
    return this.o.ttlMs + CONNECTION_STATE_GRACE_MS;
  }

  private value(token: number): string {
    return `${this.o.ownerId}|${token}`;
  }

  /** Takes the lease if free (or extends it if already ours); true when this owner holds it now. */
  async acquire(): Promise<boolean> {
    const token = Number(await scripts.acquire.run(this.o.redis, [this.lease, this.fence], [this.o.ownerId, this.o.ttlMs]));
    this.held = token > 0 ? token : null;
    return this.held !== null;
  }

  /**
   * Extends the lease, and the connection's state with it; false (and no longer held) when it expired
   * or another owner took it.
   */
  async renew(): Promise<boolean> {
    if (this.held === null) return false;
    const ok = Number(await scripts.renew.run(this.o.redis, [this.lease, this.state], [this.value(this.held), this.o.ttlMs, this.stateTtlMs])) === 1;
    if (!ok) this.held = null;
    return ok;
  }

  /** Gives the lease up at once so another replica takes over without waiting out the TTL. */
  async release(): Promise<void> {
    if (this.held === null) return;
    const token = this.held;
    this.held = null;
    await scripts.release.run(this.o.redis, [this.lease], [this.value(token)]);
  }

  /** Forgets the lease locally without asking Redis (it is lost or cannot be renewed in time). */
  drop(): void {
    this.held = null;
  }

  /**
   * The fencing check: resolves with the token when Redis still names this owner and token, throws
   * LeaseLostError otherwise (and the lease counts as lost from then on).
   */
  async check(): Promise<number> {
    const token = this.held;
    if (token === null) throw new LeaseLostError(this.o.botId, null);
    const current = await this.o.redis.get(this.lease);
    if (current !== this.value(token)) {
      if (this.held === token) this.held = null;
      throw new LeaseLostError(this.o.botId, token);
    }
    return token;
  }
}

/** A bot's connection lease as anyone may read it (the admin API): who holds it, for how long yet. */
export interface LeaseSnapshot {
  /** The holding replica's owner id, or null when no lease is live. */
  holder: string | null;
  token: number | null;
  /** Milliseconds until the lease lapses unless renewed; null when none is live. */
  expiresInMs: number | null;
  /** Whether the connection left state for its next holder (it outlives the lease by CONNECTION_STATE_GRACE_MS). */
  resumable: boolean;
}

/** Reads a bot's lease and state keys (one slot: they share the bot's hash tag) without touching them. */
export async function readConnectionLease(redis: RedisClient, prefix: string, botId: string): Promise<LeaseSnapshot> {
  const keys = redisKeys(prefix);
  const [value, ttl, state] = await Promise.all([redis.get(keys.connectionLease(botId)), redis.pttl(keys.connectionLease(botId)), redis.exists(keys.connectionState(botId))]);
  const at = value?.lastIndexOf('|') ?? -1;
  if (!value || at < 1) return { holder: null, token: null, expiresInMs: null, resumable: state === 1 };
  const token = Number(value.slice(at + 1));
  return { holder: value.slice(0, at), token: Number.isSafeInteger(token) ? token : null, expiresInMs: ttl >= 0 ? ttl : null, resumable: state === 1 };
}
