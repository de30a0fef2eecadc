import { z } from 'zod';
import { natsServers } from '@conveyor/bus';

/** `host:port` entries, comma-separated (IPv6 hosts in brackets); unset or blank is none. */
function hostPortList(what: string) {
  return z.string().optional().transform((value, ctx) => {
    if (value === undefined || value.trim() === '') return undefined;
    const out: Array<{ host: string; port: number }> = [];
    for (const raw of value.split(',')) {
      const entry = raw.trim();
      const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:\[\]]+):(\d{1,5})$/.exec(entry);
      const port = m ? Number(m[2]) : 0;
      if (!m || port < 1 || port > 65535) {
        ctx.addIssue({ code: 'custom', message: `"${entry}" is not host:port; give ${what} as host:port, comma-separated` });
        return z.NEVER;
      }
      out.push({ host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port });
    }
    return out;
  });
}

/** Settings every service reads; defaults point at the local development services. */
export const BaseEnv = z.object({
  /** One NATS server, or the nodes of a cluster comma-separated (`nats://n1:4222,nats://n2:4222,nats://n3:4222`). */
  NATS_URL: z.string().default('nats://127.0.0.1:4222').superRefine((value, ctx) => {
    try {
      natsServers(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `${(err as Error).message}; give nats://host:port, several comma-separated for a cluster` });
    }
  }),
  /**
   * Copies of every stream Conveyor provisions, applied when streams are created and updated: 1 on
   * a single NATS server, 3 on a cluster of three or more JetStream servers (a stream then survives
   * losing one). Consumers follow their stream.
   */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * Seconds a service whose NATS user may not create or update streams (every role but the admin
   * service in the deployments) waits at start for the admin service to provision them.
   */
  NATS_STREAMS_WAIT_SECONDS: z.coerce.number().min(0).max(3600).default(180),
  /**
   * The Redis to use; with REDIS_SENTINELS, only its user, password, database number and scheme
   * (`rediss:` for TLS) are used, for the master the Sentinels name.
   */
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /**
   * A Redis Sentinel set to ask for the master (`host:port`, comma-separated): every connection, the
   * pub/sub subscribers' too, follows the master when the Sentinels fail it over.
   */
  REDIS_SENTINELS: hostPortList('the Sentinels'),
  /**
   * The seed nodes of a Redis Cluster (`host:port`, comma-separated; a few masters are enough, the
   * client learns the rest). REDIS_URL then gives only the user, password and scheme. Not together
   * with REDIS_SENTINELS.
   */
  REDIS_CLUSTER_NODES: hostPortList('the cluster\'s seed nodes'),
  /**
   * Parts the cluster-wide pipeline cap (PIPELINE_CONCURRENCY) is split into, each with the hash tag
   * of its sessions' keys. 1 (the default): one exact cap, and on a Redis Cluster every session's
   * state on one node. More spreads the sessions over the cluster's nodes, at a cost: each part
   * admits its share of the cap, so a burst on one part waits while another has room. Every process
   * of a deployment must use the same value (the keys' names depend on it).
   */
  PIPELINE_SHARDS: z.coerce.number().int().min(1).max(1024).default(1),
  /** The master name the Sentinels monitor (`sentinel monitor <name> …`); required with REDIS_SENTINELS. */
  REDIS_SENTINEL_MASTER: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'a Sentinel master name: letters, digits, ".", "_" or "-"').optional(),
  /** The Sentinels' own password (`requirepass` in sentinel.conf), or a file holding it (the file wins). */
  REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
  REDIS_SENTINEL_PASSWORD_FILE: z.string().min(1).optional(),
  DATABASE_URL: z.string().url().default('postgresql://postgres@127.0.0.1:5432/conveyor'),
  /** Postgres connections one process may open; unset, the role's own default (ServiceDefinition.databasePoolSize). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(1000).optional(),
  CONVEYOR_SUBJECT_PREFIX: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/).default('conveyor'),
  CONVEYOR_CONFIG: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PORT: z.coerce.number().int().min(0).max(65535).optional(),
  HOST: z.string().default('0.0.0.0'),
  /** A second port for health and metrics only, so the service port exposes nothing but the service's own routes. */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** Seconds a stopping service waits for in-flight work before handing it back to the broker. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).max(3600).default(25),
}).superRefine((env, ctx) => {
  if (env.REDIS_SENTINELS && !env.REDIS_SENTINEL_MASTER) ctx.addIssue({ code: 'custom', path: ['REDIS_SENTINEL_MASTER'], message: 'REDIS_SENTINELS is set: name the master the Sentinels monitor' });
  if (!env.REDIS_SENTINELS && env.REDIS_SENTINEL_MASTER) ctx.addIssue({ code: 'custom', path: ['REDIS_SENTINELS'], message: 'REDIS_SENTINEL_MASTER is set: give the Sentinels as host:port, comma-separated' });
  if (env.REDIS_SENTINELS && env.REDIS_CLUSTER_NODES) ctx.addIssue({ code: 'custom', path: ['REDIS_CLUSTER_NODES'], message: 'REDIS_SENTINELS is set too: give a Sentinel set or a Redis Cluster, not both' });
});
export type BaseEnv = z.infer<typeof BaseEnv>;

export class EnvError extends Error {}

/** A service's settings: every service's (`BaseEnv`) and those of its role's schema. */
export type ServiceEnv<S extends z.ZodObject> = BaseEnv & z.infer<S>;

/** Validates the environment at start; a bad value stops the service with every problem named. */
export function loadEnv<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  throw invalidEnvironment(parsed.error.issues);
}

/**
 * Validates every service's settings and the role's own (each schema with its own rules, refinements
 * included); a bad value in either stops the service with every problem of both named.
 */
export function loadServiceEnv<S extends z.ZodObject>(role: S, env: NodeJS.ProcessEnv = process.env): ServiceEnv<S> {
  const base = BaseEnv.safeParse(env);
  const own = role.safeParse(env);
  if (base.success && own.success) return { ...base.data, ...own.data };
  throw invalidEnvironment([...(base.success ? [] : base.error.issues), ...(own.success ? [] : own.error.issues)]);
}

function invalidEnvironment(issues: readonly z.core.$ZodIssue[]): EnvError {
  return new EnvError(`invalid environment:\n${issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`);
}
