import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { existsSync } from 'node:fs';
import type { ExecResult, SandboxLimit } from '@conveyor/contracts';

/** The resource bounds of one command, set as rlimits on everything it starts. */
export interface ExecLimits {
  /** CPU seconds (RLIMIT_CPU): SIGXCPU at the bound, SIGKILL a second later. */
  cpuSeconds: number;
  /** Address space of each process (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads of the sandbox's user (RLIMIT_NPROC): a fork bomb stops here. */
  processes: number;
  /** Size of any one file written (RLIMIT_FSIZE): SIGXFSZ past it. */
  fileBytes: number;
  /** Open files per process (RLIMIT_NOFILE). */
  openFiles: number;
  /** Size of the command's private /tmp (a tmpfs). */
  tmpBytes: number;
  /** Bytes kept of stdout and of stderr; the rest is counted and dropped. */
  outputBytes: number;
}

export const DEFAULT_EXEC_LIMITS: ExecLimits = {
  cpuSeconds: 60,
  memoryBytes: 2 * 1024 ** 3,
  processes: 256,
  fileBytes: 64 * 1024 ** 2,
  openFiles: 256,
  tmpBytes: 64 * 1024 ** 2,
  outputBytes: 1024 ** 2,
};

export interface BubblewrapOptions {
  limits: ExecLimits;
  /** Host user and group the sandbox runs as when the service runs as root (never root itself). */
  runAs?: { uid: number; gid: number };
  bwrapPath?: string;
  prlimitPath?: string;
}

export interface ExecSpec {
  workspaceDir: string;
  /** Skills mounted read-only at /skills/<name>: name → host folder. */
  skills: ReadonlyMap<string, string>;
  command: string;
  /** Positional parameters of the shell command (`$0`, `$1` …), passed without any quoting. */
  args?: readonly string[];
  /** Where the command starts, as the sandbox sees it (under /workspace or /skills). */
  workdir: string;
  env: Readonly<Record<string, string>>;
  timeoutMs: number;
  network: boolean;
  signal?: AbortSignal;
}

/** The read-only system a command sees: the OS's programs and libraries, nothing of the host's data. */
const SYSTEM_BINDS = ['/usr', '/etc/alternatives', '/etc/ld.so.cache', '/etc/ssl', '/etc/ca-certificates'];
const NETWORK_BINDS = ['/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf'];
const MERGED_USR_LINKS: [string, string][] = [['usr/bin', '/bin'], ['usr/sbin', '/sbin'], ['usr/lib', '/lib'], ['usr/lib64', '/lib64']];

/** The user a command runs as inside its namespace; files it makes belong to `runAs` on the host. */
const SANDBOX_UID = 1000;

/**
 * Runs one shell command in a bubblewrap sandbox: new user, PID, IPC, UTS, cgroup and (unless the
 * pipeline allows the network) network namespaces; the system read-only; only the workspace writable;
 * a private /tmp; no capabilities; a clean environment; rlimits (by util-linux `prlimit`) on CPU time,
 * memory, processes, file size and open files; the wall time enforced by killing the whole sandbox
 * (bubblewrap is PID 1 of its namespace, so every process it started dies with it).
 */
export class Bubblewrap {
  private readonly bwrap: string;
  private readonly prlimit: string;
  private readonly systemBinds: string[];
  private readonly networkBinds: string[];

  constructor(private readonly o: BubblewrapOptions) {
    this.bwrap = o.bwrapPath ?? 'bwrap';
    this.prlimit = o.prlimitPath ?? 'prlimit';
    this.systemBinds = SYSTEM_BINDS.filter((p) => existsSync(p));
    this.networkBinds = NETWORK_BINDS.filter((p) => existsSync(p));
  }

  /** The argument list, from prlimit on: what a test or an operator can run by hand. */
  argv(spec: Omit<ExecSpec, 'signal' | 'timeoutMs'>, limits: ExecLimits = this.o.limits): string[] {
    const l = limits;
    const args = [
      `--cpu=${l.cpuSeconds}:${l.cpuSeconds + 1}`,
      `--as=${l.memoryBytes}`,
      `--nproc=${l.processes}`,
      `--fsize=${l.fileBytes}`,
      `--nofile=${l.openFiles}`,
      '--core=0',
      '--',
      this.bwrap,
      '--unshare-all',
      ...(spec.network ? ['--share-net'] : []),
      '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID),
      '--hostname', 'sandbox',
      '--die-with-parent',
      '--new-session',
      '--cap-drop', 'ALL',
      ...this.systemBinds.flatMap((p) => ['--ro-bind', p, p]),
      ...(spec.network ? this.networkBinds.flatMap((p) => ['--ro-bind', p, p]) : []),
      ...MERGED_USR_LINKS.flatMap(([target, link]) => ['--symlink', target, link]),
      '--proc', '/proc',
      '--dev', '/dev',
      '--size', String(l.tmpBytes), '--tmpfs', '/tmp',
      '--bind', spec.workspaceDir, '/workspace',
      ...[...spec.skills].flatMap(([name, dir]) => ['--ro-bind', dir, `/skills/${name}`]),
      '--chdir', spec.workdir,
      '--clearenv',
      ...Object.entries({ ...spec.env, PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/workspace', TMPDIR: '/tmp', LANG: 'C.UTF-8' }).flatMap(([k, v]) => ['--setenv', k, v]),
      '/bin/sh', '-c', spec.command,
      ...(spec.args ?? []),
    ];
    return args;
  }

  /**
   * Starts a long-lived program (a stdio MCP server) in a sandbox like a command's, with its own
   * limits, stdin and stdout as pipes and no wall time: the caller owns its life and stops it with
   * `kill(child)`. `program` and `args` are passed as they are (no shell parsing of their text).
   */
  start(spec: Omit<ExecSpec, 'command' | 'args' | 'timeoutMs' | 'signal'> & { program: string; args: readonly string[] }, limits: ExecLimits): ChildProcessByStdio<Writable, Readable, Readable> {
    const argv = this.argv({ ...spec, command: 'exec "$0" "$@"', args: [spec.program, ...spec.args] }, limits);
    return spawn(this.prlimit, argv, {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      ...(this.o.runAs ? { uid: this.o.runAs.uid, gid: this.o.runAs.gid } : {}),
      env: {},
    });
  }

  run(spec: ExecSpec): Promise<ExecResult> {
    return this.spawn(this.argv(spec), { timeoutMs: spec.timeoutMs, signal: spec.signal, outputBytes: this.o.limits.outputBytes }).then((r) => ({
      exitCode: r.code,
      signal: r.timedOut ? 'SIGKILL' : r.signal,
      stdout: r.stdout.toString('utf8'),
      stderr: r.stderr.toString('utf8'),
      durationMs: r.durationMs,
      outputBytes: r.outputBytes,
      limits: limitsHit({ code: r.code, timedOut: r.timedOut, output: `${r.stdout.toString('utf8')}\n${r.stderr.toString('utf8')}`, outputTruncated: r.truncated }),
    }));
  }

  /**
   * The workspace as a gzipped tar, made by GNU tar inside the sandbox: links and names a command
   * made are read only where they point inside the sandbox, never on the host.
   */
  async pack(workspaceDir: string, maxBytes: number): Promise<Buffer> {
    const argv = this.argv({ workspaceDir, skills: new Map(), command: 'exec tar -czf - --numeric-owner -C /workspace .', workdir: '/workspace', env: {}, network: false });
    const r = await this.spawn(argv, { timeoutMs: ARCHIVE_TIMEOUT_MS, outputBytes: maxBytes });
    if (r.code !== 0 || r.truncated) throw new Error(`packing the workspace failed (exit ${r.code}${r.truncated ? `, over ${maxBytes} bytes` : ''}): ${r.stderr.toString('utf8').slice(0, 500)}`);
    return r.stdout;
  }

  /** Unpacks a workspace's stored tar into its (empty) folder, by GNU tar inside the sandbox. */
  async unpack(workspaceDir: string, archive: Buffer): Promise<void> {
    const argv = this.argv({ workspaceDir, skills: new Map(), command: 'exec tar -xzf - --no-same-owner --no-same-permissions -C /workspace', workdir: '/workspace', env: {}, network: false });
    const r = await this.spawn(argv, { timeoutMs: ARCHIVE_TIMEOUT_MS, outputBytes: 64 * 1024, stdin: archive });
    if (r.code !== 0) throw new Error(`unpacking the workspace failed (exit ${r.code}): ${r.stderr.toString('utf8').slice(0, 500)}`);
  }

  private spawn(argv: string[], o: { timeoutMs: number; outputBytes: number; signal?: AbortSignal; stdin?: Buffer }): Promise<Spawned> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(this.prlimit, argv, {
        stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        detached: true,
        ...(this.o.runAs ? { uid: this.o.runAs.uid, gid: this.o.runAs.gid } : {}),
        env: {},
      });
      if (o.stdin) {
        child.stdin!.on('error', () => undefined);
        child.stdin!.end(o.stdin);
      }
      const out = { stdout: [] as Buffer[], stderr: [] as Buffer[], kept: { stdout: 0, stderr: 0 }, total: 0 };
      const collect = (which: 'stdout' | 'stderr') => (chunk: Buffer) => {
        out.total += chunk.byteLength;
        const room = o.outputBytes - out.kept[which];
        if (room <= 0) return;
        const part = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
        out[which].push(part);
        out.kept[which] += part.byteLength;
      };
      child.stdout!.on('data', collect('stdout'));
      child.stderr!.on('data', collect('stderr'));
      let timedOut = false;
      const kill = () => killSandbox(child.pid);
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, o.timeoutMs);
      const onAbort = () => kill();
      o.signal?.addEventListener('abort', onAbort, { once: true });
      child.on('error', (err) => {
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        reject(err);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        resolve({
          code,
          signal,
          timedOut,
          stdout: Buffer.concat(out.stdout),
          stderr: Buffer.concat(out.stderr),
          outputBytes: out.total,
          truncated: out.kept.stdout + out.kept.stderr < out.total,
          durationMs: performance.now() - started,
        });
      });
    });
  }
}

/** Kills a sandbox and everything in it: bubblewrap leads its own process group. */
export function killSandbox(pid: number | undefined): void {
  try {
    if (pid !== undefined) process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

interface Spawned {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: Buffer;
  stderr: Buffer;
  outputBytes: number;
  truncated: boolean;
  durationMs: number;
}

/** Packing or unpacking a workspace (at most its cap, tens of MiB) takes seconds at the most. */
const ARCHIVE_TIMEOUT_MS = 120_000;

/** Exit statuses of a process a signal ended, as the shell reports them (128 + the signal's number). */
const SIGXCPU_STATUS = 128 + 24;
const SIGXFSZ_STATUS = 128 + 25;
const SIGKILL_STATUS = 128 + 9;

/**
 * Which limits stopped a command. CPU time and file size end a process by their own signals, which
 * the exit status carries; the wall time is this process's own kill. Memory and process bounds only
 * make a call fail (ENOMEM, EAGAIN) inside the program, so they are read from what the common
 * runtimes print then: a best effort, counted so an operator sees the bounds being reached.
 */
function limitsHit(o: { code: number | null; timedOut: boolean; output: string; outputTruncated: boolean }): SandboxLimit[] {
  const hit = new Set<SandboxLimit>();
  if (o.timedOut) hit.add('wall_time');
  if (o.code === SIGXCPU_STATUS || (o.code === SIGKILL_STATUS && !o.timedOut)) hit.add('cpu_time');
  if (o.code === SIGXFSZ_STATUS || /File size limit exceeded/.test(o.output)) hit.add('file_size');
  if (/MemoryError|Cannot allocate memory|out of memory|heap out of memory|std::bad_alloc/i.test(o.output)) hit.add('memory');
  if (/Cannot fork|fork: (retry: )?Resource temporarily unavailable|BlockingIOError|EAGAIN/.test(o.output)) hit.add('processes');
  if (o.outputTruncated) hit.add('output');
  return [...hit];
}
