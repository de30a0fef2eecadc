import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { topology, type RedisKeyLayout, type Topology } from '@conveyor/contracts';
import { BusPublisher, connectBus, redactUrl } from '@conveyor/bus';
import { ConfigReadModel, type ConfigReadModelOptions } from '@conveyor/config-read-model';
import { closeDatabase, createDatabase, DEFAULT_POOL_SIZE, QueryLog, type Database, type PrismaClient } from '@conveyor/persistence';
import { METRIC_NAMES, meter, type Logger } from '@conveyor/telemetry';
import type { BaseEnv } from './env.js';
import { createRedis, redisTarget, SentinelRedis } from './redis.js';
import type { RedisClient } from '@conveyor/redis-scripts';

/**
 * The connections a service holds, and its settings (`E`: every service's and its role's). Built
 * before Nest starts so a missing dependency fails fast and clearly.
 */
export interface Infra<E extends BaseEnv = BaseEnv> {
  env: E;
  logger: Logger;
  topology: Topology;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  publisher: BusPublisher;
  prisma: PrismaClient;
  /** The database: `prisma` for configuration and admin paths, `db.pool` for the per-message statements. */
  db: Database;
  /** One group-committing query log per process, flushed on shutdown. */
  queryLog: QueryLog;
  redis: RedisClient;
  /** How the per-message Redis keys are spread over hash slots (PIPELINE_SHARDS); the same in every process. */
  keyLayout: RedisKeyLayout;
  /** This process's cached view of configuration, dropped row by row on `config.changed` (all of it on reconnect). */
  config: ConfigReadModel;
}

export interface InfraOptions {
  /** Postgres connections this process opens at most unless DATABASE_POOL_SIZE says otherwise. */
  databasePoolSize?: number;
  /** The role's bounds on its configuration cache (ingress keeps bots for BOT_CACHE_SECONDS). */
  readModel?: Pick<ConfigReadModelOptions, 'botTtlMs'>;
}

export class DependencyUnavailableError extends Error {}

const configChanges = meter.createCounter(METRIC_NAMES.configChanges, { description: 'config.changed events received, by kind' });
const configResets = meter.createCounter(METRIC_NAMES.configCacheResets, { description: 'Times every configuration cache was dropped (reconnect, subscription error, unreadable event)' });

const HOW_TO_START = {
  NATS: 'start it with `docker compose up -d nats` or Debian\'s nats-server: `nats-server -js`',
  Redis: 'start it with `docker compose up -d redis` or Debian\'s redis-server: `redis-server --daemonize yes`',
  PostgreSQL: 'start it with `docker compose up -d postgres` or Debian\'s postgresql: `pg_ctlcluster 15 main start`',
};

function unavailable(what: keyof typeof HOW_TO_START, url: string, err: unknown): DependencyUnavailableError {
  const safeUrl = redactUrl(url);
  return new DependencyUnavailableError(`${what} is not reachable at ${safeUrl} (${(err as Error).message}); ${HOW_TO_START[what]}`);
}

/** The process's Postgres pool size: DATABASE_POOL_SIZE when set, else the role's default. */
export function databasePoolSize(env: Pick<BaseEnv, 'DATABASE_POOL_SIZE'>, roleDefault: number = DEFAULT_POOL_SIZE): number {
  return env.DATABASE_POOL_SIZE ?? roleDefault;
}

export async function connectInfra<E extends BaseEnv>(name: string, env: E, logger: Logger, options: InfraOptions = {}): Promise<Infra<E>> {
  const inboxPrefix = topology(env.CONVEYOR_SUBJECT_PREFIX).subjects.inboxPrefix(name);
  const nc = await connectBus({ url: env.NATS_URL, name, logger, extra: { inboxPrefix } }).catch((err) => {
    throw unavailable('NATS', env.NATS_URL, err);
  });
  const redis = createRedis(env, name);
  logRedisConnectionState(redis, logger);
  await redis.connect().catch(async (err) => {
    await nc.close();
    throw unavailable('Redis', redisTarget(env), err);
  });
  const db = createDatabase(env.DATABASE_URL, databasePoolSize(env, options.databasePoolSize), {
    onPreparedStatementsUnavailable: (err) =>
      logger.warn({ err }, 'the database side cannot keep prepared statements (a pooler in transaction mode without their support?); per-message statements go out unnamed from now on'),
  });
  const prisma = db.prisma;
  await prisma.$queryRaw`SELECT 1`.catch(async (err: unknown) => {
    await nc.close();
    redis.disconnect();
    throw unavailable('PostgreSQL', env.DATABASE_URL, err);
  });
  const js = jetstream(nc);
  // No API check here: JetStream may still be electing its leaders (a cluster starting beside the
  // service); the streams check at start (awaitStreams) waits for it, bounded.
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const topo = topology(env.CONVEYOR_SUBJECT_PREFIX);
  const config = new ConfigReadModel(prisma, {
    ...options.readModel,
    onPipelineRejected: (botId, pipelineId, issues) => logger.error({ botId, pipelineId, issues }, 'pipeline rejected: invalid config'),
  });
  config.subscribe(nc, topo.subjects.configChanged, logger, {
    changed: (event) => configChanges.add(1, { kind: event.kind }),
    reset: (reason) => configResets.add(1, { reason }),
  });
  return { env, logger, topology: topo, nc, js, jsm, publisher: new BusPublisher(js, { streams: Object.values(topo.streams) }), prisma, db, redis, keyLayout: { pipelineShards: env.PIPELINE_SHARDS }, config,
    queryLog: new QueryLog(db.statements, (err, queryIds) => logger.error({ err, count: queryIds.length, queryIds: queryIds.slice(0, 20) }, 'query log entries not written')),
  };
}

/**
 * One log line when the Redis connection is lost and one when it is back, however many reconnection
 * attempts lie between. The error listener also keeps ioredis from printing every failed attempt as
 * an "Unhandled error event" stack trace; the commands that fail report their own errors.
 */
export function logRedisConnectionState(redis: RedisClient, logger: Logger): void {
  let state: 'connecting' | 'up' | 'down' = 'connecting';
  let lastError: Error | undefined;
  redis.on('error', (err: Error) => { lastError = err; });
  redis.on('ready', () => {
    if (state === 'down') logger.info({ dependency: 'redis', state: 'up' }, 'Redis connection restored');
    state = 'up';
    lastError = undefined;
  });
  redis.on(SentinelRedis.GIVEN_UP, () => {
    state = 'down';
    logger.warn({ dependency: 'redis', state: 'down', err: lastError }, 'Redis client given up by ioredis during a Sentinel failover; connecting again');
  });
  // 'reconnecting', not 'close': a connection this process closes itself (shutdown) is not an outage.
  redis.on('reconnecting', () => {
    if (state !== 'up') return;
    state = 'down';
    logger.warn({ dependency: 'redis', state: 'down', err: lastError }, 'Redis connection lost; reconnecting');
  });
}

export async function closeInfra(infra: Infra): Promise<void> {
  await infra.nc.drain().catch(() => undefined);
  infra.redis.disconnect();
  await infra.queryLog.flush().catch(() => undefined);
  await closeDatabase(infra.db);
}
