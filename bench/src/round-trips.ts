// Round trips the services make per message, counted at the servers: Redis commands by name
// (`INFO commandstats`, which counts the commands scripts run too), the Redis round trips themselves
// (the commands clients sent, from MONITOR; a script call named by its file), NATS messages published by clients and delivered to them (`/varz`), and
// Postgres transactions and rows written per table (`pg_stat_database`, `pg_stat_user_tables`).
// The counts are only the services' own when the Redis and NATS servers serve this run alone, so the
// e2e bench starts its own for `--round-trips`; the database is the run's own anyway.
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { RedisScript } from '@conveyor/redis-scripts';

export interface RoundTripCounts {
  redis: Map<string, number>;
  /** Commands the clients sent (round trips), by name; a script call by its script's name. */
  redisSent: Map<string, number>;
  natsIn: number;
  natsOut: number;
  /** Payload and header bytes of those messages, as the server counted them. */
  natsInBytes: number;
  natsOutBytes: number;
  pgTransactions: number;
  /** Rows inserted and updated per table. */
  pgRows: Map<string, number>;
}

export interface RoundTripEndpoints {
  redisUrl: string;
  natsMonitorUrl: string;
  databaseUrl: string;
}

async function redisCommandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  // Lines such as `cmdstat_evalsha:calls=123,usec=...`.
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

/** Every Lua script of the repository's packages (`libs/<package>/lua/`), by the SHA its EVALSHA names. */
function scriptNamesBySha(): Map<string, string> {
  const libs = fileURLToPath(new URL('../../libs/', import.meta.url));
  const names = new Map<string, string>();
  for (const pkg of readdirSync(libs)) {
    const dir = path.join(libs, pkg, 'lua');
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
    } catch {
      continue;
    }
    for (const f of files) {
      const script = new RedisScript(path.join(dir, f));
      names.set(createHash('sha1').update(script.body).digest('hex'), script.name);
    }
  }
  return names;
}

/**
 * Counts the commands clients send (MONITOR shows those, and marks the ones scripts run as from `lua`).
 * MONITOR costs the server time; the bench uses it only with `--round-trips`, against its own Redis.
 */
class SentCommands {
  readonly counts = new Map<string, number>();
  private monitor?: Awaited<ReturnType<Redis['monitor']>>;
  private readonly scripts = scriptNamesBySha();

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    const client = new Redis(this.url);
    this.monitor = await client.monitor();
    this.monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return;
      const command = String(args[0] ?? '').toLowerCase();
      const name = command === 'evalsha' ? `script ${this.scripts.get(String(args[1])) ?? String(args[1]).slice(0, 8)}` : command === 'eval' ? 'script (by body)' : command;
      this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    });
    client.disconnect();
  }

  stop(): void {
    this.monitor?.disconnect();
  }
}

interface NatsTraffic {
  in: number;
  out: number;
  inBytes: number;
  outBytes: number;
}

async function natsMessages(monitorUrl: string): Promise<NatsTraffic> {
  const res = await fetch(`${monitorUrl}/varz`);
  const varz: unknown = await res.json();
  const field = (name: string) => (typeof varz === 'object' && varz !== null && name in varz ? Number(Reflect.get(varz, name)) : NaN);
  return { in: field('in_msgs'), out: field('out_msgs'), inBytes: field('in_bytes'), outBytes: field('out_bytes') };
}

async function pgCounts(client: pg.Client): Promise<{ transactions: number; rows: Map<string, number> }> {
  const db = await client.query<{ n: string }>('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()');
  const tables = await client.query<{ relname: string; n: string }>('SELECT relname, n_tup_ins + n_tup_upd AS n FROM pg_stat_user_tables');
  return { transactions: Number(db.rows[0]?.n ?? 0), rows: new Map(tables.rows.map((r) => [r.relname, Number(r.n)])) };
}

function diff(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

/** Backends report their statistics when idle, at most a second late (PostgreSQL 15). */
const STATS_SETTLE_MS = 2_000;

/** Counts between `start()` and `stop()`. */
export class RoundTripMeter {
  private readonly redis: Redis;
  private readonly pg: pg.Client;
  private readonly sent: SentCommands;
  private before?: { redis: Map<string, number>; nats: NatsTraffic; pg: { transactions: number; rows: Map<string, number> } };

  constructor(private readonly endpoints: RoundTripEndpoints) {
    this.redis = new Redis(endpoints.redisUrl, { lazyConnect: true });
    this.pg = new pg.Client({ connectionString: endpoints.databaseUrl });
    this.sent = new SentCommands(endpoints.redisUrl);
  }

  async start(): Promise<void> {
    await Promise.all([this.redis.connect(), this.pg.connect()]);
    // The phase before may still be writing (group commits) and its statistics still arriving: the
    // baseline waits for both, or the phase measured here is charged with the last one's tail.
    await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
    this.before = await this.read();
    await this.sent.start();
  }

  async stop(): Promise<RoundTripCounts> {
    await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
    this.sent.stop();
    const after = await this.read();
    const before = this.before!;
    await Promise.all([this.redis.quit(), this.pg.end()]);
    return {
      redis: diff(after.redis, before.redis),
      redisSent: new Map(this.sent.counts),
      natsIn: after.nats.in - before.nats.in,
      natsOut: after.nats.out - before.nats.out,
      natsInBytes: after.nats.inBytes - before.nats.inBytes,
      natsOutBytes: after.nats.outBytes - before.nats.outBytes,
      // This meter's own two reads are transactions too.
      pgTransactions: after.pg.transactions - before.pg.transactions - 2,
      pgRows: diff(after.pg.rows, before.pg.rows),
    };
  }

  private async read() {
    // This meter's INFO call is counted too: one per read, subtracted by `formatRoundTrips`.
    const [redis, nats, pgc] = await Promise.all([redisCommandCalls(this.redis), natsMessages(this.endpoints.natsMonitorUrl), pgCounts(this.pg)]);
    return { redis, nats, pg: pgc };
  }
}

/**
 * The state scripts a short reply waits for between the webhook and its final callback, in order:
 * admission (with its re-asks: a query that beat its own registration waits for it and asks again),
 * the run's attempt, the delivery step that takes the final event's batch (ending the session's turn
 * in the same step where one server holds every slot: `reply-deliver-ending`). The ingress's
 * registration runs beside the orchestrator's first ask, a separate end of the turn (a Redis Cluster)
 * beside the final callback, and the batch's commit after it: none of them delays the reply.
 */
export const LATENCY_PATH: RoundTripFocus = { label: 'state round trips on the latency path', scripts: ['session-acquire', 'run-next-attempt', 'reply-deliver', 'reply-deliver-ending'] };

/**
 * The scripts a streamed event's delivery runs: stored and its batch taken, the batch recorded, the
 * leases kept alive. The rest of a streaming phase's count is the reply's share of its message's own
 * scripts and the takeover sweep, which runs on a timer (one command per delivery shard) whatever
 * the traffic.
 */
export const EVENT_DELIVERY: RoundTripFocus = {
  label: 'delivery round trips per event',
  scripts: ['reply-deliver', 'reply-enqueue', 'reply-deliver-ending', 'reply-enqueue-ending', 'reply-take', 'reply-commit', 'reply-renew', 'session-extend'],
};

/** A named set of scripts whose round trips are summed on a line of their own. */
export interface RoundTripFocus {
  label: string;
  scripts: readonly string[];
}

/**
 * Lines for the bench's report: each count divided by the messages of the phase; with `focus`, the
 * round trips of those scripts on a line of their own.
 */
export function formatRoundTrips(c: RoundTripCounts, messages: number, focus?: RoundTripFocus): string[] {
  const per = (n: number) => (n / messages).toFixed(2);
  const kib = (bytes: number) => (bytes / messages / 1024).toFixed(2);
  const redis = [...c.redis].map(([k, v]) => [k, k === 'info' ? v - 1 : v] as const).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  const redisTotal = redis.reduce((a, [, v]) => a + v, 0);
  const rows = [...c.pgRows].sort((a, b) => b[1] - a[1]);
  const sent = [...c.redisSent].filter(([k]) => k !== 'info' && k !== 'monitor').sort((a, b) => b[1] - a[1]);
  const sentTotal = sent.reduce((a, [, v]) => a + v, 0);
  return [
    `round trips per message     Redis ${per(sentTotal)} sent (${sent.map(([k, v]) => `${k} ${per(v)}`).join(', ')})`,
    `                            Redis ${per(redisTotal)} commands run, scripts' included (${redis.map(([k, v]) => `${k} ${per(v)}`).join(', ')})`,
    `                            NATS ${per(c.natsIn)} messages published (${kib(c.natsInBytes)} KiB), ${per(c.natsOut)} delivered (${kib(c.natsOutBytes)} KiB)`,
    `                            Postgres ${per(c.pgTransactions)} transactions; rows written ${rows.map(([k, v]) => `${k} ${per(v)}`).join(', ') || 'none'}`,
    ...(focus ? [focusLine(c, per, focus)] : []),
  ];
}

function focusLine(c: RoundTripCounts, per: (n: number) => string, focus: RoundTripFocus): string {
  const steps = focus.scripts.map((name) => [name, c.redisSent.get(`script ${name}`) ?? 0] as const);
  const total = steps.reduce((a, [, v]) => a + v, 0);
  return `                            ${focus.label} ${per(total)} (${steps.filter(([, v]) => v > 0).map(([k, v]) => `${k} ${per(v)}`).join(', ')})`;
}
