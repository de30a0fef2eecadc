import { readFileSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';
import type { BaseEnv } from './env.js';

export type RedisEnv = Pick<BaseEnv, 'REDIS_URL' | 'REDIS_SENTINELS' | 'REDIS_SENTINEL_MASTER' | 'REDIS_SENTINEL_PASSWORD' | 'REDIS_SENTINEL_PASSWORD_FILE'>;

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

/** A Redis client for this process, not yet connected (`connect()` it). */
export function createRedis(env: RedisEnv, connectionName: string): Redis {
  const options = redisOptions(env, connectionName);
  return options.sentinels ? new Redis(options) : new Redis(env.REDIS_URL, options);
}

/** Where the client connects, for error messages: REDIS_URL, or the Sentinels and master name (never a password). */
export function redisTarget(env: RedisEnv): string {
  if (!env.REDIS_SENTINELS) return env.REDIS_URL;
  return `Sentinels ${env.REDIS_SENTINELS.map((s) => `${s.host}:${s.port}`).join(',')} (master ${env.REDIS_SENTINEL_MASTER ?? '?'})`;
}
