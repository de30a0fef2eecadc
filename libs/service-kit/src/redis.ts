import { readFileSync } from 'node:fs';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisClient } from '@conveyor/redis-scripts';

// The client type belongs with the clients this module creates.
export type { RedisClient } from '@conveyor/redis-scripts';
import type { BaseEnv } from './env.js';

export type RedisEnv = Pick<BaseEnv, 'REDIS_URL' | 'REDIS_SENTINELS' | 'REDIS_SENTINEL_MASTER' | 'REDIS_SENTINEL_PASSWORD' | 'REDIS_SENTINEL_PASSWORD_FILE' | 'REDIS_CLUSTER_NODES'>;

/**
 * The options of every Redis connection a process opens (the shared client and, through
 * `duplicate()`, the pub/sub subscribers), so a Sentinel set, a password or TLS applies to all of
 * them alike. With REDIS_SENTINELS, the client asks the Sentinels for the master and asks again
 * after losing it; REDIS_URL then gives only the master's credentials, database and scheme.
 */
export function redisOptions(env: RedisEnv, connectionName: string): RedisOptions {
  const common: RedisOptions = {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    connectionName,
    // ioredis waits up to 5 s between attempts; the ingress refuses messages until this connection is
    // back, so a returning Redis (or a newly promoted master) is noticed within a second.
    retryStrategy: (attempt) => Math.min(50 * 2 ** (attempt - 1), 1_000) + Math.floor(Math.random() * 100),
    // Commands issued in the same tick (a handler's lease, sequence and delivery steps) share one write.
    enableAutoPipelining: true,
  };
  if (!env.REDIS_SENTINELS) return common;
  if (!env.REDIS_SENTINEL_MASTER) throw new Error('REDIS_SENTINELS is set: REDIS_SENTINEL_MASTER must name the master the Sentinels monitor');
  const url = new URL(env.REDIS_URL);
  const tls = url.protocol === 'rediss:';
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new Error(`REDIS_URL's path must be a database number (found "${url.pathname}")`);
  const sentinelPassword = env.REDIS_SENTINEL_PASSWORD_FILE ? readFileSync(env.REDIS_SENTINEL_PASSWORD_FILE, 'utf8').trim() : env.REDIS_SENTINEL_PASSWORD;
  return {
    ...common,
    sentinels: env.REDIS_SENTINELS,
    name: env.REDIS_SENTINEL_MASTER,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    db,
    ...(tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    // Sentinels are asked again at the client's own pace (retryStrategy) once every one was tried.
    sentinelRetryStrategy: (attempt) => Math.min(100 * attempt, 1_000),
    // A master demoted while still reachable (a manual or partition failover) would keep answering
    // this client with READONLY; the detector drops the connection when the Sentinels switch masters.
    failoverDetector: true,
  };
}

/** REDIS_URL's credentials and scheme, for a cluster's nodes (a cluster has no database number but 0). */
function clusterNodeOptions(env: RedisEnv, common: RedisOptions): RedisOptions {
  const url = new URL(env.REDIS_URL);
  if (url.pathname.length > 1 && url.pathname !== '/0') throw new Error(`a Redis Cluster has only database 0; REDIS_URL names "${url.pathname}"`);
  return {
    ...common,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * The options of a Redis Cluster client: the node connections get the same options as a single
 * server's; commands wait out a slot's failover (the cluster's retry and its MOVED/ASK redirections)
 * as a single server's commands wait out a reconnect.
 */
export function redisClusterOptions(env: RedisEnv, connectionName: string): ClusterOptions {
  const common = redisOptions({ ...env, REDIS_SENTINELS: undefined }, connectionName);
  const { retryStrategy, enableAutoPipelining, lazyConnect, ...nodeOptions } = common;
  return {
    lazyConnect,
    enableAutoPipelining,
    clusterRetryStrategy: (attempt) => retryStrategy?.(attempt) ?? 1_000,
    // A replica never answers a script or a write; reads follow the writes they depend on.
    scaleReads: 'master',
    redisOptions: clusterNodeOptions(env, nodeOptions),
    slotsRefreshTimeout: 2_000,
  };
}

/** A Redis client for this process, not yet connected (`connect()` it): a single server, a Sentinel set's master, or a Redis Cluster. */
export function createRedis(env: RedisEnv, connectionName: string): RedisClient {
  if (env.REDIS_CLUSTER_NODES) return new Cluster(env.REDIS_CLUSTER_NODES, redisClusterOptions(env, connectionName));
  const options = redisOptions(env, connectionName);
  return options.sentinels ? new SentinelRedis(options) : new Redis(env.REDIS_URL, options);
}

/**
 * A Sentinel set's client that stays closed only when this process closes it.
 *
 * ioredis's failover detector disconnects the connector when a Sentinel announces a new master. When
 * that lands while the client is between connections, still asking the Sentinels where the master is
 * (it lost the old master a moment earlier), the attempt fails as "Connection is closed" and ioredis
 * moves the client to `end` for good: every later command fails at once, and the ingress would answer
 * 503 until the process restarts. This client connects again after an end it did not ask for, at the
 * pace of its retry strategy. `duplicateClient` gives it a sibling of the same kind (ioredis's own
 * `duplicate()` would give a plain client).
 */
export class SentinelRedis extends Redis {
  /** Emitted when ioredis gave the client up without being asked, just before it connects again. */
  static readonly GIVEN_UP = 'conveyor:given-up';
  private closing = false;
  private revivals = 0;

  constructor(options: RedisOptions) {
    // Replies as ioredis gives them by default: the type every other client of the process has.
    super({ ...options, replyMapping: 'legacy' });
    // Only a client that was up is brought back: a first connect that fails is the caller's to report.
    let wasReady = false;
    this.on('ready', () => {
      wasReady = true;
      this.revivals = 0;
    });
    this.on('end', () => {
      if (this.closing || !wasReady) return;
      this.emit(SentinelRedis.GIVEN_UP);
      const wait = this.options.retryStrategy?.(++this.revivals);
      setTimeout(() => {
        if (!this.closing && this.status === 'end') this.connect().catch(() => undefined);
      }, typeof wait === 'number' ? wait : 1_000).unref();
    });
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.closing = true;
    super.disconnect(reconnect);
  }

  override sendCommand(...args: Parameters<Redis['sendCommand']>): unknown {
    if (args[0].name === 'quit') this.closing = true;
    return super.sendCommand(...args);
  }

  /** A second connection with the same options that comes back the same way (see `duplicateClient`). */
  sibling(): SentinelRedis {
    return new SentinelRedis(this.options);
  }
}

/** A second connection with the same options (a pub/sub subscriber), of the same kind as the client. */
export function duplicateClient(redis: RedisClient): RedisClient {
  if (redis instanceof Cluster) return redis.duplicate();
  return redis instanceof SentinelRedis ? redis.sibling() : redis.duplicate();
}

/** Where the client connects, for error messages: REDIS_URL, or the Sentinels and master name (never a password). */
export function redisTarget(env: RedisEnv): string {
  if (env.REDIS_CLUSTER_NODES) return `Redis Cluster ${env.REDIS_CLUSTER_NODES.map((s) => `${s.host}:${s.port}`).join(',')}`;
  if (!env.REDIS_SENTINELS) return env.REDIS_URL;
  return `Sentinels ${env.REDIS_SENTINELS.map((s) => `${s.host}:${s.port}`).join(',')} (master ${env.REDIS_SENTINEL_MASTER ?? '?'})`;
}
