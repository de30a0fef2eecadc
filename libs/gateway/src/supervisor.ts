import { ConnectionLease } from './lease.js';
import { reconnectBackoff, type ReconnectBackoff } from './backoff.js';
import type { RedisClient } from '@conveyor/redis-scripts';

/** A bot whose platform is reached over a connection a gateway holds. */
export interface ConnectionTarget {
  botId: string;
  adapter: string;
  /** The bot's adapter settings; a change reconnects with the new ones. */
  config: unknown;
}

/** An open platform connection as the supervisor sees it. */
export interface LiveConnection {
  /** Resolves with the reason once the connection ended by itself (the peer closed it, an error). */
  readonly ended: Promise<string>;
  /** Closes it; resolves when it is closed. */
  close(reason: string): Promise<void>;
}

/**
 * Opens the connection of a bot this replica owns. The lease is passed on so the connection checks its
 * fencing token before it publishes inbound messages or sends outbound ones.
 */
export type Connect = (target: ConnectionTarget, lease: ConnectionLease) => Promise<LiveConnection>;

export interface SupervisorLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the supervisor reports, for metrics. */
export interface SupervisorEvents {
  owned?(botId: string, token: number): void;
  lost?(botId: string, reason: string): void;
  connected?(botId: string): void;
  disconnected?(botId: string, reason: string): void;
  connectFailed?(botId: string, err: unknown): void;
}

export interface ConnectionSupervisorOptions {
  redis: RedisClient;
  prefix: string;
  /** This replica's id, unique across replicas (a random id per process). */
  ownerId: string;
  /** The lease TTL: how long a killed owner keeps a bot before another replica takes over. */
  leaseTtlMs: number;
  /** How often leases are renewed and free bots tried; default a third of the TTL. */
  tickMs?: number;
  /** The enabled bots whose adapter holds a connection. */
  targets: () => Promise<ConnectionTarget[]>;
  connect: Connect;
  backoff?: ReconnectBackoff;
  /** Most bots one replica connects (a bound on sockets and memory); the rest stay for other replicas. */
  maxConnections?: number;
  logger: SupervisorLogger;
  events?: SupervisorEvents;
}

interface Slot {
  target: ConnectionTarget;
  configKey: string;
  lease: ConnectionLease;
  connection?: LiveConnection;
  connecting: boolean;
  /**
   * The previous connection is still closing: a new one waits for it, so the platform never sees two
   * at once and what the old one writes last (its connection state) lands before the new one starts.
   */
  closing: boolean;
  failures: number;
  nextAttemptAt: number;
  lastRenewedAt: number;
}

/**
 * Keeps exactly one live connection per bot across gateway replicas: on every tick it renews the
 * leases it holds (a lease it lost closes that connection at once), tries to take the leases of bots
 * nobody holds, connects the bots it owns, and reconnects a dropped connection after a bounded
 * backoff for as long as it owns the bot. `stop()` closes every connection and releases every lease,
 * so another replica takes over within one tick instead of one TTL.
 */
export class ConnectionSupervisor {
  private readonly slots = new Map<string, Slot>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private ticking: Promise<void> | undefined;
  private readonly tickMs: number;
  private readonly backoff: ReconnectBackoff;

  constructor(private readonly o: ConnectionSupervisorOptions) {
    this.tickMs = o.tickMs ?? Math.max(100, Math.floor(o.leaseTtlMs / 3));
    this.backoff = o.backoff ?? reconnectBackoff();
  }

  /** Bots this replica holds the lease of (connected or about to be). */
  owned(): string[] {
    return [...this.slots.values()].filter((s) => s.lease.token !== null).map((s) => s.target.botId);
  }

  /** The lease of an owned bot, for fencing checks outside the connection (outbound requests). */
  leaseOf(botId: string): ConnectionLease | undefined {
    const slot = this.slots.get(botId);
    return slot && slot.lease.token !== null ? slot.lease : undefined;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const loop = () => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        if (this.running) this.timer = setTimeout(loop, this.tickMs);
      });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    await Promise.all([...this.slots.values()].map((s) => this.retire(s, 'gateway stopping')));
    this.slots.clear();
  }

  /** One round; exposed for tests that drive the supervisor step by step. */
  async tick(): Promise<void> {
    let targets: ConnectionTarget[] | undefined;
    try {
      targets = await this.o.targets();
    } catch (err) {
      this.o.logger.warn({ err }, 'could not list the bots to connect; keeping the current ones');
    }
    if (targets) this.reconcile(targets);
    await Promise.all([...this.slots.values()].map((s) => this.step(s)));
  }

  private reconcile(targets: ConnectionTarget[]): void {
    const wanted = new Map(targets.map((t) => [t.botId, t]));
    for (const [botId, slot] of this.slots) {
      if (!wanted.has(botId)) {
        this.slots.delete(botId);
        void this.retire(slot, 'bot disabled or removed');
      }
    }
    for (const target of wanted.values()) {
      const configKey = JSON.stringify(target.config ?? null);
      const slot = this.slots.get(target.botId);
      if (!slot) {
        this.slots.set(target.botId, {
          target,
          configKey,
          lease: new ConnectionLease({ redis: this.o.redis, prefix: this.o.prefix, botId: target.botId, ownerId: this.o.ownerId, ttlMs: this.o.leaseTtlMs }),
          connecting: false,
          closing: false,
          failures: 0,
          nextAttemptAt: 0,
          lastRenewedAt: 0,
        });
      } else if (slot.configKey !== configKey) {
        slot.target = target;
        slot.configKey = configKey;
        slot.nextAttemptAt = 0;
        if (slot.connection) void this.disconnect(slot, 'bot settings changed');
      }
    }
  }

  private async step(slot: Slot): Promise<void> {
    const botId = slot.target.botId;
    const now = Date.now();
    if (slot.lease.token !== null) {
      try {
        if (await slot.lease.renew()) slot.lastRenewedAt = now;
        else await this.lost(slot, 'lease taken over or expired');
      } catch (err) {
        // Redis unreachable: past two thirds of the TTL another replica may take over any moment.
        if (Date.now() - slot.lastRenewedAt > (this.o.leaseTtlMs * 2) / 3) {
          slot.lease.drop();
          await this.lost(slot, 'lease could not be renewed in time');
        } else this.o.logger.warn({ err, botId }, 'connection lease renewal failed; retrying');
      }
    } else {
      const max = this.o.maxConnections ?? Number.POSITIVE_INFINITY;
      if (this.owned().length >= max) return;
      try {
        if (await slot.lease.acquire()) {
          slot.lastRenewedAt = now;
          slot.failures = 0;
          slot.nextAttemptAt = 0;
          this.o.logger.info({ botId, fencingToken: slot.lease.token }, 'connection lease acquired');
          this.o.events?.owned?.(botId, slot.lease.token ?? 0);
        }
      } catch (err) {
        this.o.logger.warn({ err, botId }, 'could not try the connection lease');
      }
    }
    if (slot.lease.token !== null && !slot.connection && !slot.connecting && !slot.closing && Date.now() >= slot.nextAttemptAt && this.running) {
      // Not awaited: a slow handshake must not hold back the renewals of the other bots.
      void this.open(slot);
    }
  }

  private async open(slot: Slot): Promise<void> {
    const botId = slot.target.botId;
    slot.connecting = true;
    try {
      const connection = await this.o.connect(slot.target, slot.lease);
      if (slot.lease.token === null || !this.running || this.slots.get(botId) !== slot) {
        await connection.close('lease lost while connecting');
        return;
      }
      slot.connection = connection;
      slot.failures = 0;
      this.o.events?.connected?.(botId);
      void connection.ended.then((reason) => {
        if (slot.connection !== connection) return;
        slot.connection = undefined;
        slot.failures++;
        slot.nextAttemptAt = Date.now() + this.backoff(slot.failures);
        this.o.logger.warn({ botId, reason, retryInMs: slot.nextAttemptAt - Date.now() }, 'platform connection ended; reconnecting');
        this.o.events?.disconnected?.(botId, reason);
      });
    } catch (err) {
      slot.failures++;
      slot.nextAttemptAt = Date.now() + this.backoff(slot.failures);
      this.o.logger.warn({ err, botId, attempt: slot.failures, retryInMs: slot.nextAttemptAt - Date.now() }, 'platform connection failed');
      this.o.events?.connectFailed?.(botId, err);
    } finally {
      slot.connecting = false;
    }
  }

  private async disconnect(slot: Slot, reason: string): Promise<void> {
    const connection = slot.connection;
    slot.connection = undefined;
    if (!connection) return;
    slot.closing = true;
    try {
      await connection.close(reason).catch((err: unknown) => this.o.logger.warn({ err, botId: slot.target.botId }, 'closing a platform connection failed'));
    } finally {
      slot.closing = false;
    }
    this.o.events?.disconnected?.(slot.target.botId, reason);
  }

  private async lost(slot: Slot, reason: string): Promise<void> {
    this.o.logger.warn({ botId: slot.target.botId, reason }, 'connection lease lost; disconnecting');
    this.o.events?.lost?.(slot.target.botId, reason);
    await this.disconnect(slot, reason);
  }

  private async retire(slot: Slot, reason: string): Promise<void> {
    await this.disconnect(slot, reason);
    await slot.lease.release().catch((err: unknown) => this.o.logger.warn({ err, botId: slot.target.botId }, 'could not release the connection lease; it expires by itself'));
  }
}
