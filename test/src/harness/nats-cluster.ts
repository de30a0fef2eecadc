import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { NATS_SERVER_BIN } from '../deploy/nats-server.js';
import { distinctFreePorts } from './ports.js';
import { waitUntil } from './wait.js';

/** One node of an owned cluster: its own client, route and monitoring ports and store folder. */
export interface ClusterNode {
  /** The server name, as JetStream's cluster info names leaders and replicas. */
  name: string;
  url: string;
  running(): boolean;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same ports; `wipe` empties its store first (a replaced node). */
  start(options?: { wipe?: boolean }): Promise<void>;
}

export interface OwnedNatsCluster {
  nodes: ClusterNode[];
  /** Every node's client URL, comma-separated, as NATS_URL takes them. */
  url: string;
  node(name: string): ClusterNode;
  /** The server currently leading `stream` (from `$JS.API.STREAM.INFO`), undefined while it has none. */
  streamLeader(stream: string): Promise<string | undefined>;
  /** The server currently leading a durable consumer (consumers elect leaders of their own). */
  consumerLeader(stream: string, durable: string): Promise<string | undefined>;
  /** Waits until every replica of each stream is current again (a restarted node caught up). */
  waitStreamsCurrent(streams: readonly string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

interface StreamClusterInfo {
  cluster?: { leader?: string; replicas?: Array<{ name: string; current: boolean; offline?: boolean; lag?: number; active?: number }> };
}

/**
 * A JetStream cluster of `size` nats-server processes on loopback, routed to each other, each with a
 * store folder of its own under one temporary folder (removed by `stop`). A fault test kills and
 * restarts single nodes; the machine's shared server is not touched.
 */
export async function startOwnedNatsCluster(size = 3): Promise<OwnedNatsCluster> {
  const root = await mkdtemp(path.join(tmpdir(), 'conveyor-nats-cluster-'));
  const clusterName = `c${path.basename(root).slice(-6).replace(/[^a-zA-Z0-9]/g, 'x')}`;
  const ports: Array<{ client: number; route: number; monitor: number }> = [];
  const free = await distinctFreePorts(size * 3);
  for (let i = 0; i < size; i++) ports.push({ client: free[3 * i], route: free[3 * i + 1], monitor: free[3 * i + 2] });
  const routes = ports.map((p) => `nats-route://127.0.0.1:${p.route}`);

  const nodes = await Promise.all(ports.map(async (p, i) => {
    const name = `n${i + 1}`;
    const dir = path.join(root, name);
    const storeDir = path.join(dir, 'js');
    const conf = path.join(dir, 'nats.conf');
    await mkdir(dir, { recursive: true });
    await writeFile(conf, [
      `server_name: ${name}`,
      `listen: 127.0.0.1:${p.client}`,
      `http: 127.0.0.1:${p.monitor}`,
      `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
      `cluster { name: ${clusterName}, listen: 127.0.0.1:${p.route}, routes: [${routes.filter((_, j) => j !== i).join(', ')}] }`,
      '',
    ].join('\n'));
    let child: ChildProcess | undefined;
    const logs: string[] = [];
    const spawnIt = () => {
      const c = spawn(NATS_SERVER_BIN, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
      const collect = (d: Buffer) => {
        logs.push(...d.toString().split('\n').filter(Boolean));
        if (logs.length > 2_000) logs.splice(0, logs.length - 2_000);
      };
      c.stdout!.on('data', collect);
      c.stderr!.on('data', collect);
      child = c;
    };
    const running = () => !!child && child.exitCode === null && child.signalCode === null;
    const kill = async () => {
      const c = child;
      if (!c || !running()) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    };
    const node: ClusterNode & { spawnIt: () => void; waitUp: () => Promise<void> } = {
      name,
      url: `nats://127.0.0.1:${p.client}`,
      running,
      kill,
      spawnIt,
      // Up: the client port answers and JetStream is on (the full /healthz waits for a meta leader,
      // which a lone first node cannot have).
      waitUp: async () => { await waitUntil(`nats node ${name} up`, async () => {
        if (child && !running()) throw new Error(`nats node ${name} exited:\n${logs.slice(-20).join('\n')}`);
        const res = await fetch(`http://127.0.0.1:${p.monitor}/healthz?js-enabled-only=true`).catch(() => undefined);
        await res?.body?.cancel();
        return res?.status === 200;
      }, 30_000, 100); },
      start: async (options = {}) => {
        if (running()) return;
        if (options.wipe) await rm(storeDir, { recursive: true, force: true });
        spawnIt();
        await node.waitUp();
      },
    };
    return node;
  }));
  for (const n of nodes) n.spawnIt();

  let admin: NatsConnection | undefined;
  const stop = async () => {
    await admin?.close().catch(() => undefined);
    await Promise.all(nodes.map((n) => n.kill()));
    await rm(root, { recursive: true, force: true });
  };
  const url = nodes.map((n) => n.url).join(',');
  try {
    await Promise.all(nodes.map((n) => n.waitUp()));
    admin = await connect({ servers: nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    // JetStream answers once the nodes elected a meta leader.
    await waitUntil('nats cluster meta leader', async () => {
      const res = await admin!.request('$JS.API.INFO', undefined, { timeout: 2_000 }).catch(() => undefined);
      return !!res && !('error' in (res.json() as object));
    }, 60_000, 250);
  } catch (err) {
    await stop();
    throw err;
  }

  const streamInfo = async (stream: string, subject = `$JS.API.STREAM.INFO.${stream}`): Promise<StreamClusterInfo | undefined> => {
    const res = await admin!.request(subject, undefined, { timeout: 2_000 }).catch(() => undefined);
    const body = res?.json() as (StreamClusterInfo & { error?: unknown }) | undefined;
    return body && !body.error ? body : undefined;
  };
  return {
    nodes,
    url,
    node: (name) => {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no nats node ${name}`);
      return n;
    },
    streamLeader: async (stream) => (await streamInfo(stream))?.cluster?.leader || undefined,
    consumerLeader: async (stream, durable) => (await streamInfo(stream, `$JS.API.CONSUMER.INFO.${stream}.${durable}`))?.cluster?.leader || undefined,
    waitStreamsCurrent: async (streams, timeoutMs = 60_000) => {
      for (const stream of streams) {
        await waitUntil(`stream ${stream} replicas current`, async () => {
          const c = (await streamInfo(stream))?.cluster;
          if (c?.leader && (c.replicas ?? []).every((r) => r.current && !r.offline)) return true;
          // Thrown, not returned: a timeout then says what the replicas looked like last.
          throw new Error(`leader ${c?.leader ?? 'none'}, replicas ${JSON.stringify(c?.replicas ?? [])}`);
        }, timeoutMs, 250);
      }
    },
    stop,
  };
}
