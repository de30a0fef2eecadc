/**
 * Runs deployment workloads the way a container engine would, without one: inside a network namespace
 * of their own (every Service name resolves to its loopback, so each container's own ports and
 * hostnames are the manifest's; the pods of a StatefulSet, which share their ports, each on a loopback
 * address of its own), each container in a mount namespace of its own with its volumes at
 * their mount paths, the repository's built tree at the image's /app, the root file system read-only
 * where the manifest asks for it, and the manifest's user. Third-party images (NATS, Redis, Postgres,
 * the trace collectors) run as this machine's binaries with the manifest's arguments, or as the test's
 * own OTLP receiver.
 *
 * Only meaningful inside the network namespace the conformance suite creates (see conformance-main.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../harness/services.js';
import type { Container, ExecProbe, Probe, Workload } from './artifacts.js';
import { NATS_SERVER_BIN } from './nats-server.js';

const POSTGRES_BIN = process.env.POSTGRES_BIN_DIR ?? findPostgresBin();

function findPostgresBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).sort() : [];
  return versions.length ? path.join(base, versions[versions.length - 1]!, 'bin') : '/usr/bin';
}

/** How a third-party image runs here: this machine's binary for the same server. */
type LocalImage = 'nats' | 'redis' | 'postgres' | 'otlp';

export function localImage(image: string): LocalImage | undefined {
  const name = image.split(':')[0]!;
  if (/(^|\/)nats$/.test(name)) return 'nats';
  if (/(^|\/)redis$/.test(name)) return 'redis';
  if (/(^|\/)postgres$/.test(name) || /^pgvector\/pgvector$/.test(name)) return 'postgres';
  if (/^jaegertracing\//.test(name) || /^otel\/opentelemetry-collector/.test(name)) return 'otlp';
  return undefined;
}

export interface RunningContainer {
  workload: Workload;
  container: Container;
  child: ChildProcess;
  logs: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

/** What the official images' entrypoints do before the server (the Postgres image creates its user and database). */
function prepareDataDir(kind: LocalImage, c: Container, dataDir: string): void {
  if (kind !== 'postgres') return;
  const user = c.env.POSTGRES_USER || 'postgres';
  const pwfile = path.join(dataDir, '..', 'pwfile');
  writeFileSync(pwfile, (c.env.POSTGRES_PASSWORD ?? '') + '\n');
  const pgdata = path.join(dataDir, 'pgdata');
  mkdirSync(pgdata, { recursive: true });
  // The image runs Postgres as its own `postgres` user; here that is the machine's.
  spawnSync('chown', ['-R', 'postgres:postgres', path.dirname(dataDir)]);
  const init = spawnSync('setpriv', ['--reuid=postgres', '--regid=postgres', '--clear-groups', path.join(POSTGRES_BIN, 'initdb'), '-D', pgdata, '-U', user, '--pwfile', pwfile, '--auth-host=scram-sha-256', '--auth-local=trust'], { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  writeFileSync(path.join(pgdata, 'pg_hba.conf'), 'local all all trust\nhost all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n');
  const db = c.env.POSTGRES_DB || user;
  const single = spawnSync('setpriv', ['--reuid=postgres', '--regid=postgres', '--clear-groups', path.join(POSTGRES_BIN, 'postgres'), '--single', '-D', pgdata, 'postgres'], { input: db === 'postgres' ? '' : `CREATE DATABASE "${db}" OWNER "${user}";\n`, encoding: 'utf8' });
  if (single.status !== 0) throw new Error(`creating database ${db} failed: ${single.stderr}`);
}

/**
 * Mount points are made on this machine's file system, so suites that run at once share them, and
 * removing one takes the mounts on it away in every mount namespace (Linux detaches them): a
 * container of another suite would lose its volume mid-run. So each suite marks the mount points it
 * uses (a file named after its process, in the mount point's directory here), a mount point a suite
 * had to make is marked as made, and a made one is removed by the last suite out: when no live
 * process holds it.
 */
const MOUNT_POINTS = path.join(tmpdir(), 'conveyor-mount-points');
const MADE = 'made';

function marksOf(target: string): string {
  return path.join(MOUNT_POINTS, encodeURIComponent(target));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Leaves mark `name` on `target`; another suite's clean-up may remove an empty marks directory meanwhile. */
function mark(target: string, name: string): void {
  for (let attempt = 1; ; attempt++) {
    try {
      mkdirSync(marksOf(target), { recursive: true });
      writeFileSync(path.join(marksOf(target), name), '');
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 3) throw err;
    }
  }
}

/** Whether a live process holds `target`; the marks of dead ones are removed on the way. */
function held(target: string): boolean {
  const dir = marksOf(target);
  let holders = 0;
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    if (name === MADE) continue;
    if (alive(Number(name))) holders++;
    else rmSync(path.join(dir, name), { force: true });
  }
  return holders > 0;
}

export class PodNetwork {
  readonly running: RunningContainer[] = [];
  private readonly root: string;
  /** Mount points this suite uses, marked as held (see MOUNT_POINTS). */
  private readonly holding = new Set<string>();

  /**
   * @param appDir where a Conveyor container's /app comes from (its role's tree, or the whole build)
   */
  constructor(
    private readonly appDir: (c: Container) => string,
    private readonly onLog: (line: string) => void = () => undefined,
  ) {
    this.root = mkdtempSync('/tmp/conveyor-pods-');
    chmodSync(this.root, 0o755);
  }

  /** Marks a mount point as held by this suite and creates it on the host if missing (see MOUNT_POINTS). */
  private mountPoint(target: string, kind: 'dir' | 'file'): void {
    if (!this.holding.has(target)) {
      mark(target, String(process.pid));
      this.holding.add(target);
    }
    if (existsSync(target)) return;
    const missing: string[] = [];
    for (let p = kind === 'dir' ? target : path.dirname(target); !existsSync(p); p = path.dirname(p)) missing.push(p);
    mkdirSync(kind === 'dir' ? target : path.dirname(target), { recursive: true });
    if (kind === 'file') {
      writeFileSync(target, '');
      missing.push(target);
    }
    for (const made of missing) mark(made, MADE);
  }

  /** Starts one container of a workload; resolves once the process is spawned. */
  start(workload: Workload, c: Container): RunningContainer {
    const local = localImage(c.image);
    const dir = mkdtempSync(path.join(this.root, `${workload.name}-${c.name}-`));
    chmodSync(dir, 0o755);
    const binds: [string, string][] = [];
    // Volumes: every directory holding mounted files becomes one bound directory, as a volume mount does.
    const byDir = new Map<string, Container['files']>();
    for (const f of c.files) byDir.set(path.posix.dirname(f.path), [...(byDir.get(path.posix.dirname(f.path)) ?? []), f]);
    let n = 0;
    for (const [target, files] of byDir) {
      const src = path.join(dir, `volume-${n++}`);
      mkdirSync(src, { recursive: true });
      for (const f of files) {
        const file = path.join(src, path.posix.basename(f.path));
        writeFileSync(file, f.content, { mode: f.mode });
        chmodSync(file, f.mode);
        // Secret and ConfigMap files belong to the pod's user, as the kubelet's fsGroup handling makes them readable to it.
        if (c.uid !== undefined) chownSync(file, c.uid, c.gid ?? c.uid);
      }
      this.mountPoint(target, 'dir');
      binds.push([src, target]);
    }
    for (const target of c.dirs) {
      const src = path.join(dir, `dir-${n++}`);
      mkdirSync(src, { recursive: true });
      if (c.uid !== undefined) chownSync(src, c.uid, c.gid ?? c.uid);
      this.mountPoint(target, 'dir');
      binds.push([src, target]);
    }
    for (const [target, repoPath] of Object.entries(c.binds)) {
      this.mountPoint(target, 'file');
      binds.push([path.join(repoRoot, repoPath), target]);
    }

    let argv = [...c.argv];
    // The Node image's entrypoint runs its arguments when they name a command.
    if (argv[0] === 'docker-entrypoint.sh') argv = argv.slice(1);
    if (local === 'nats') {
      if (argv[0] === 'nats-server' || argv[0] === '/nats-server') argv = argv.slice(1);
      argv = [NATS_SERVER_BIN, ...argv];
      // A pod of its own would listen on every address of its own network; here each node of a
      // cluster binds its pod's address instead (clients and monitoring; routes on the cluster port).
      if (workload.address) {
        argv.push('-a', workload.address);
        if (c.ports.cluster !== undefined) argv.push('--cluster_listen', `nats://${workload.address}:${c.ports.cluster}`);
      }
    } else if (local === 'redis') {
      if (argv[0] === 'redis-server') argv = argv.slice(1);
      argv = ['redis-server', ...argv];
    } else if (local === 'postgres') {
      const dataMount = c.dirs.find((d) => d.includes('postgresql/data')) ?? c.dirs[0];
      const dataSrc = binds.find(([, t]) => t === dataMount)?.[0];
      if (!dataSrc) throw new Error(`${workload.name}: the Postgres image needs a data volume`);
      prepareDataDir('postgres', c, dataSrc);
      const pgdata = c.env.PGDATA && dataMount && c.env.PGDATA.startsWith(dataMount) ? c.env.PGDATA : path.posix.join(dataMount!, 'pgdata');
      const socketDir = c.dirs.find((d) => d.includes('run/postgresql'));
      argv = [path.join(POSTGRES_BIN, 'postgres'), '-D', pgdata, '-c', 'listen_addresses=*', ...(socketDir ? ['-k', socketDir] : ['-k', '/tmp'])];
    }
    const conveyor = !local;
    if (conveyor) {
      this.mountPoint('/app', 'dir');
      binds.unshift([this.appDir(c), '/app']);
    }
    const user = local === 'postgres' ? { uid: 'postgres', gid: 'postgres' } : c.uid !== undefined ? { uid: String(c.uid), gid: String(c.gid ?? c.uid) } : undefined;
    // A mount hides what was below its target: one whose target holds another's source (the /tmp
    // emptyDir over a checkout or scratch directory under /tmp) goes after it.
    const hidesASource = ([, target]: [string, string]) => binds.some(([src]) => src.startsWith(`${target}/`));
    binds.sort((a, b) => Number(hidesASource(a)) - Number(hidesASource(b)));
    const script = [
      'set -e',
      ...binds.map(([src, target]) => `mount --bind ${q(src)} ${q(target)}`),
      ...(conveyor ? ['mount -o remount,bind,ro /app'] : []),
      ...(c.readOnlyRootFilesystem ? ['mount -o remount,bind,ro /'] : []),
      `cd ${q(conveyor || existsSync(c.workdir) ? c.workdir : '/')}`,
      `exec ${user ? `setpriv --reuid=${user.uid} --regid=${user.gid} --clear-groups ` : ''}${argv.map(q).join(' ')}`,
    ].join('\n');
    // The image's PATH plus this machine's, so `node` is the Node.js this suite runs on.
    const env = { ...c.env, PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOSTNAME: workload.podName };
    const child = spawn('unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const logs: string[] = [];
    const collect = (d: Buffer) => {
      for (const line of d.toString().split('\n').filter(Boolean)) {
        logs.push(line);
        if (logs.length > 400) logs.shift();
        this.onLog(`[${workload.source} ${workload.name}/${c.name}] ${line}`);
      }
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const running: RunningContainer = {
      workload,
      container: c,
      child,
      logs,
      exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    };
    void running.exited.then((e) => (running.exit = e));
    this.running.push(running);
    return running;
  }

  /** One probe, as the kubelet (or compose's health check) runs it: HTTP from outside, exec inside the container. */
  async probe(r: RunningContainer, probe: Probe): Promise<boolean> {
    if (probe.kind === 'http') {
      const ctl = AbortSignal.timeout(Math.max(1, probe.timeoutSeconds) * 1000);
      const res = await fetch(`http://${r.workload.address ?? '127.0.0.1'}:${probe.port}${probe.path}`, { signal: ctl }).catch(() => undefined);
      if (res) await res.body?.cancel();
      return res !== undefined && res.status >= 200 && res.status < 400;
    }
    return this.execProbe(r, probe);
  }

  private execProbe(r: RunningContainer, probe: ExecProbe): Promise<boolean> {
    if (r.exit || r.child.pid === undefined) return Promise.resolve(false);
    const c = r.container;
    const user = localImage(c.image) === 'postgres' ? ['--reuid=postgres', '--regid=postgres'] : c.uid !== undefined ? [`--reuid=${c.uid}`, `--regid=${c.gid ?? c.uid}`] : [];
    // The container's process is `unshare`'s child chain: nsenter into the mount namespace of the exec'd process.
    const args = ['-t', String(r.child.pid), '-m', '--', ...(user.length ? ['setpriv', ...user, '--clear-groups'] : []), ...probe.command];
    return new Promise((resolve) => {
      const p = spawn('nsenter', args, { env: { ...c.env, PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: 'ignore', cwd: '/' });
      const timer = setTimeout(() => p.kill('SIGKILL'), Math.max(1, probe.timeoutSeconds) * 1000);
      p.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code === 0);
      });
      p.once('error', () => resolve(false));
    });
  }

  async stopAll(graceMs = 10_000): Promise<void> {
    await Promise.all(
      this.running.map(async (r) => {
        if (r.exit) return;
        r.child.kill('SIGTERM');
        const t = setTimeout(() => r.child.kill('SIGKILL'), graceMs);
        await r.exited;
        clearTimeout(t);
      }),
    );
  }

  cleanup(): void {
    for (const target of this.holding) {
      rmSync(path.join(marksOf(target), String(process.pid)), { force: true });
      // The marks of a directory no suite made (/tmp) go with its last holder.
      try {
        rmdirSync(marksOf(target));
      } catch {
        // still marked by another suite, or made by one: its clean-up below or theirs removes it
      }
    }
    const made = (existsSync(MOUNT_POINTS) ? readdirSync(MOUNT_POINTS) : [])
      .map((name) => decodeURIComponent(name))
      .filter((p) => existsSync(path.join(marksOf(p), MADE)));
    // Deepest first, so each directory is empty when its turn comes; one that is not holds another
    // suite's mount point.
    for (const p of made.sort((a, b) => b.length - a.length)) {
      if (held(p)) continue;
      try {
        if (existsSync(p)) {
          if (readdirSync(p, { withFileTypes: true }).length === 0) rmdirSync(p);
          else continue;
        }
      } catch {
        try {
          rmSync(p, { force: true });
        } catch {
          // a mount point still in use: left for the next run's cleanup
          continue;
        }
      }
      rmSync(marksOf(p), { recursive: true, force: true });
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
