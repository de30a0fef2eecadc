import { spawn, execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { ownedProcess, type OwnedDependency } from './dependencies.js';
import { distinctFreePorts } from './ports.js';
import { waitUntil } from './wait.js';
import { ask } from './redis-ask.js';

const run = promisify(execFile);

export interface OwnedRedisCluster {
  /** The masters as REDIS_CLUSTER_NODES takes them. */
  nodes: string;
  /** The settings that point a service at this cluster. */
  env: Record<string, string>;
  /** A cluster client of the test's own. */
  client(): Cluster;
  /** `CLUSTER KEYSLOT` of each key, asked of the cluster itself. */
  keySlots(keys: readonly string[]): Promise<number[]>;
  /** How many keys each master holds, by port. */
  keysPerNode(): Promise<Record<number, number>>;
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of three masters (no replicas) on loopback, each on a free port with its own folder
 * (its nodes.conf) under one temporary folder, joined with `redis-cli --cluster create` as an operator
 * would. Nothing is persisted; `stop` kills the nodes and removes the folder.
 */
export async function startOwnedRedisCluster(): Promise<OwnedRedisCluster> {
  const root = await mkdtemp(path.join(tmpdir(), 'conveyor-redis-cluster-'));
  // A node's cluster bus listens on its port + 10000: both must be free.
  const ports = await distinctFreePorts(3, { pairedOffset: 10_000 });
  const started: OwnedDependency[] = [];
  const stopAll = async () => {
    await Promise.all(started.map((d) => d.kill().catch(() => undefined)));
    await rm(root, { recursive: true, force: true });
  };
  try {
    for (const p of ports) {
      const dir = path.join(root, `node-${p}`);
      await mkdir(dir);
      started.push(await ownedProcess('redis-server (cluster node)', p, () =>
        spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(p), '--save', '', '--appendonly', 'no', '--dir', dir,
          '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--cluster-node-timeout', '5000'], { stdio: ['ignore', 'pipe', 'pipe'] }),
      async () => undefined));
    }
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 60_000 });
    await waitUntil('Redis Cluster with every slot served, known to every node', async () => {
      for (const p of ports) {
        const info = String(await ask(p, 'CLUSTER', 'INFO').catch(() => ''));
        if (!/cluster_state:ok/.test(info) || !/cluster_slots_assigned:16384/.test(info) || !/cluster_known_nodes:3/.test(info)) return false;
      }
      return true;
    }, 60_000, 200);
  } catch (err) {
    await stopAll();
    throw err;
  }
  const nodes = ports.map((p) => `127.0.0.1:${p}`).join(',');
  const client = () => new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { scaleReads: 'master' });
  return {
    nodes,
    env: { REDIS_CLUSTER_NODES: nodes, REDIS_URL: `redis://127.0.0.1:${ports[0]}` },
    client,
    keySlots: async (keys) => Promise.all(keys.map(async (k) => Number(await ask(ports[0]!, 'CLUSTER', 'KEYSLOT', k)))),
    keysPerNode: async () => {
      const out: Record<number, number> = {};
      for (const p of ports) out[p] = Number(await ask(p, 'DBSIZE'));
      return out;
    },
    stop: stopAll,
  };
}
