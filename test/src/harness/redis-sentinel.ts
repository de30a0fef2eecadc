import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { ownedProcess, type OwnedDependency } from './dependencies.js';
import { distinctFreePorts } from './ports.js';
import { waitUntil } from './wait.js';
import { ask } from './redis-ask.js';

/** Sentinel timings of the owned set: a dead master is failed over within a few seconds. */
export const SENTINEL_DOWN_AFTER_MS = 1_000;
export const SENTINEL_FAILOVER_TIMEOUT_MS = 5_000;

export interface OwnedRedisSentinel {
  /** The name the Sentinels monitor the master by (REDIS_SENTINEL_MASTER). */
  masterName: string;
  /** The Sentinels as REDIS_SENTINELS takes them. */
  sentinels: string;
  /** REDIS_URL for the services (its host is not used with Sentinels; database 0, no password). */
  url: string;
  /** The settings that point a service at this set. */
  env: Record<string, string>;
  /** A client of the test's own that follows the master through the Sentinels. */
  client(): Redis;
  /** The port of the master the Sentinels name now. */
  masterPort(): Promise<number>;
  /** Waits until the master has its replica in sync and every Sentinel knows the replica and the other two. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /**
   * SIGKILLs the current master; returns its port. With `unreplicatedMs`, the master's writes of that
   * many milliseconds before the kill never reach the replica (its link is cut and it cannot reconnect
   * meanwhile): the partial data loss of asynchronous replication, made certain instead of left to the
   * replica's lag. At most 500 ms, below the Sentinels' down-after time, so the replica stays eligible.
   * `unreplicatedBytes`: how much of the replication stream the replica missed.
   */
  killMaster(options?: { unreplicatedMs?: number }): Promise<{ port: number; unreplicatedBytes?: number }>;
  /** Waits until the Sentinels name a master other than `oldPort` (no manual step: they elect and promote it). */
  waitFailover(oldPort: number, timeoutMs?: number): Promise<number>;
  /** Starts the killed node again, empty and with no role given: the Sentinels make it a replica of the new master. */
  restart(port: number): Promise<void>;
  /** The Sentinels' processes, in the order REDIS_SENTINELS lists them (to hang one with `pause`). */
  sentinelNodes: OwnedDependency[];
  stop(): Promise<void>;
}

function fields(reply: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
  return out;
}

/**
 * A Redis master with one replica and a Sentinel trio (quorum 2) on loopback, each on a free port with
 * a folder of its own under one temporary folder (removed by `stop`). Nothing is persisted: a killed
 * node comes back empty. The machine's shared Redis is not touched.
 */
export async function startOwnedRedisSentinel(): Promise<OwnedRedisSentinel> {
  const root = await mkdtemp(path.join(tmpdir(), 'conveyor-redis-sentinel-'));
  const masterName = `m${path.basename(root).slice(-6).replace(/[^a-zA-Z0-9]/g, 'x')}`;
  const free = await distinctFreePorts(5);
  const dataPorts = free.slice(0, 2);
  const sentinelPorts = free.slice(2);
  const started: OwnedDependency[] = [];
  const nodes = new Map<number, OwnedDependency>();
  const sentinelNodes: OwnedDependency[] = [];
  const stopAll = async () => {
    await Promise.all(started.map((d) => d.kill().catch(() => undefined)));
    await rm(root, { recursive: true, force: true });
  };
  try {
    for (const [i, p] of dataPorts.entries()) {
      const dir = path.join(root, `redis-${p}`);
      await mkdir(dir);
      const replicaOf = i === 0 ? [] : ['--replicaof', '127.0.0.1', String(dataPorts[0])];
      // DEBUG SLEEP holds the replica off its master for a partial-loss kill (killMaster's unreplicatedMs).
      const dep = await ownedProcess('redis-server', p, () =>
        spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(p), '--save', '', '--appendonly', 'no', '--dir', dir, '--enable-debug-command', 'local', ...replicaOf], { stdio: ['ignore', 'pipe', 'pipe'] }),
      async () => undefined);
      started.push(dep);
      nodes.set(p, dep);
    }
    for (const p of sentinelPorts) {
      const dir = path.join(root, `sentinel-${p}`);
      await mkdir(dir);
      // Sentinel rewrites its file with what it learns (replicas, other Sentinels, epochs).
      const conf = path.join(dir, 'sentinel.conf');
      await writeFile(conf, [
        'bind 127.0.0.1',
        `port ${p}`,
        `dir ${dir}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${dataPorts[0]} 2`,
        `sentinel down-after-milliseconds ${masterName} ${SENTINEL_DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${masterName} ${SENTINEL_FAILOVER_TIMEOUT_MS}`,
        `sentinel parallel-syncs ${masterName} 1`,
        '',
      ].join('\n'));
      const sentinel = await ownedProcess('redis-sentinel', p, () => spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] }), async () => undefined);
      started.push(sentinel);
      sentinelNodes.push(sentinel);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  const sentinels = sentinelPorts.map((p) => `127.0.0.1:${p}`).join(',');

  const masterPort = async () => {
    for (const p of sentinelPorts) {
      const reply = await ask(p, 'SENTINEL', 'get-master-addr-by-name', masterName).catch(() => undefined);
      if (Array.isArray(reply) && reply.length === 2) return Number(reply[1]);
    }
    throw new Error('no Sentinel answered get-master-addr-by-name');
  };

  const set: OwnedRedisSentinel = {
    masterName,
    sentinels,
    url: `redis://127.0.0.1:${dataPorts[0]}/0`,
    env: { REDIS_URL: `redis://127.0.0.1:${dataPorts[0]}/0`, REDIS_SENTINELS: sentinels, REDIS_SENTINEL_MASTER: masterName },
    client: () => new Redis({ sentinels: sentinelPorts.map((p) => ({ host: '127.0.0.1', port: p })), name: masterName, failoverDetector: true }),
    masterPort,
    waitHealthy: async (timeoutMs = 60_000) => {
      await waitUntil('Redis master with a replica in sync, known to three Sentinels', async () => {
        const master = await masterPort().catch(() => undefined);
        if (master === undefined) return false;
        const info = String(await ask(master, 'INFO', 'replication').catch(() => ''));
        if (!/role:master/.test(info) || !/slave0:.*state=online/.test(info)) return false;
        for (const p of sentinelPorts) {
          const m = fields(await ask(p, 'SENTINEL', 'master', masterName).catch(() => undefined));
          if (Number(m['port']) !== master || Number(m['num-slaves']) < 1 || Number(m['num-other-sentinels']) < 2 || /s_down|o_down|failover/.test(m['flags'] ?? '')) return false;
          // The replica must be one the Sentinels see up, or they could not promote it.
          const replicas = await ask(p, 'SENTINEL', 'replicas', masterName).catch(() => undefined);
          if (!Array.isArray(replicas) || !replicas.map(fields).some((r) => !/s_down|disconnected/.test(r['flags'] ?? '') && r['master-link-status'] === 'ok')) return false;
        }
        return true;
      }, timeoutMs, 250);
    },
    killMaster: async (options = {}) => {
      const p = await masterPort();
      const node = nodes.get(p);
      if (!node) throw new Error(`the Sentinels name a master on ${p}, which is not a node of this set`);
      const cut = Math.min(options.unreplicatedMs ?? 0, 500);
      if (cut <= 0) {
        await node.kill();
        return { port: p };
      }
      const replica = dataPorts.find((d) => d !== p)!;
      const offset = async (port: number, field: string) => Number(new RegExp(`${field}:(\\d+)`).exec(String(await ask(port, 'INFO', 'replication').catch(() => '')))?.[1] ?? NaN);
      // The replica sleeps through the cut, so it can neither reconnect nor catch up from the master's
      // backlog; what it had received before the cut it applies when it wakes.
      const sleeper = new Redis({ host: '127.0.0.1', port: replica, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      sleeper.on('error', () => undefined);
      await sleeper.connect();
      const sleeping = sleeper.call('DEBUG', 'SLEEP', String((cut + 200) / 1000)).catch(() => undefined);
      await delay(20);
      await ask(p, 'CLIENT', 'KILL', 'TYPE', 'replica');
      await delay(cut);
      const written = await offset(p, 'master_repl_offset');
      await node.kill();
      await sleeping;
      sleeper.disconnect();
      const received = await offset(replica, 'slave_repl_offset');
      return { port: p, unreplicatedBytes: written - received };
    },
    waitFailover: async (oldPort, timeoutMs = 60_000) =>
      waitUntil(`a master other than ${oldPort}`, async () => {
        const p = await masterPort().catch(() => undefined);
        if (p === undefined || p === oldPort) return undefined;
        const info = String(await ask(p, 'INFO', 'replication').catch(() => ''));
        return /role:master/.test(info) ? p : undefined;
      }, timeoutMs, 100),
    restart: async (p) => {
      const node = nodes.get(p);
      if (!node) throw new Error(`no node on ${p}`);
      await node.start();
    },
    sentinelNodes,
    stop: stopAll,
  };
  return set;
}
