import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';
import { waitUntil } from './wait.js';

/**
 * A broker or cache of the test's own, on a free port, so a fault test can kill and restart it without
 * touching the machine's shared instances. NATS keeps its JetStream store across restarts (as a
 * production server on a volume does); Redis keeps nothing (as the dev set-up runs it).
 */
export interface OwnedDependency {
  url: string;
  port: number;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port (and, for NATS, the same store) and waits until it accepts connections. */
  start(): Promise<void>;
  /**
   * SIGSTOP: the process holds still; its port still completes TCP handshakes, but nothing it is sent
   * gets an answer until `resume` (a hung server, as opposed to a dead one).
   */
  pause(): void;
  /** SIGCONT after `pause`: it answers what it was sent meanwhile. */
  resume(): void;
  stop(): Promise<void>;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A server process of the test's own on `port`, started now; `start` again after `kill` reuses `spawnIt`. */
export async function ownedProcess(name: string, port: number, spawnIt: () => ChildProcess, cleanup: () => Promise<void>): Promise<OwnedDependency> {
  let child: ChildProcess | undefined;
  const output: string[] = [];
  const start = async () => {
    child = spawnIt();
    child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
    await waitUntil(`${name} on ${port}`, async () => {
      if (child?.exitCode !== null) throw new Error(`${name} exited: ${output.join('').slice(-2000)}`);
      return portOpen(port);
    }, 30_000, 50);
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  const signal = (sig: 'SIGSTOP' | 'SIGCONT') => {
    if (!child || child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} on ${port} is not running`);
    child.kill(sig);
  };
  await start();
  return {
    url: '',
    port,
    kill,
    start,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    stop: async () => {
      await kill();
      await cleanup();
    },
  };
}

/** `monitor`: also serve the server's HTTP monitoring endpoints (`/varz`), whose URL is then `monitorUrl`. */
export async function startOwnedNats(options: { monitor?: boolean } = {}): Promise<OwnedDependency & { monitorUrl?: string }> {
  const port = await freePort();
  const monitorPort = options.monitor ? await freePort() : undefined;
  const storeDir = await mkdtemp(path.join(tmpdir(), 'conveyor-nats-'));
  const monitorArgs = monitorPort !== undefined ? ['-m', String(monitorPort)] : [];
  const dep = await ownedProcess('nats-server', port, () =>
    spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), ...monitorArgs, '-js', '-sd', storeDir], { stdio: ['ignore', 'pipe', 'pipe'] }),
  () => rm(storeDir, { recursive: true, force: true }));
  return { ...dep, url: `nats://127.0.0.1:${port}`, ...(monitorPort !== undefined ? { monitorUrl: `http://127.0.0.1:${monitorPort}` } : {}) };
}

export async function startOwnedRedis(): Promise<OwnedDependency> {
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-redis-'));
  const dep = await ownedProcess('redis-server', port, () =>
    spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] }),
  () => rm(dir, { recursive: true, force: true }));
  return { ...dep, url: `redis://127.0.0.1:${port}` };
}
