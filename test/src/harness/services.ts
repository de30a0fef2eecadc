import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';
import { waitUntil } from './wait.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** `gateway`, `admin` and `sandbox` are started by the tests that need them (not part of the message path). */
export type ServiceName = 'ingress' | 'orchestrator' | 'runner' | 'dispatcher' | 'gateway' | 'admin' | 'sandbox';
export const ALL_SERVICES: ServiceName[] = ['ingress', 'orchestrator', 'runner', 'dispatcher'];

export interface RunningService {
  name: ServiceName;
  /** Distinguishes replicas of one role. */
  instance: string;
  port: number;
  url: string;
  /** Where health and metrics answer: `url`, or the `METRICS_PORT` the service was given. */
  healthUrl: string;
  child: ChildProcess;
  logs: string[];
  exited: Promise<number | null>;
}

const MAX_LOG_LINES = 5_000;

/**
 * Where a test file's service logs are kept whole, when the test command asks for them
 * (`CONVEYOR_TEST_SERVICE_LOGS`): one folder per test file, named by `serviceLogFolder`, so that the
 * reporter that prints a failed file's logs finds them. Memory holds only the last lines.
 */
function serviceLogFile(instance: string, pid: number | undefined): WriteStream | undefined {
  const root = process.env.CONVEYOR_TEST_SERVICE_LOGS;
  const testFile = process.argv[1];
  if (!root || !testFile) return undefined;
  const dir = path.join(root, serviceLogFolder(testFile));
  mkdirSync(dir, { recursive: true });
  return createWriteStream(path.join(dir, `${instance}.${pid ?? 'unstarted'}.log`));
}

/** The folder of one test file's service logs; `scripts/failed-service-logs.mjs` names it the same way. */
function serviceLogFolder(testFile: string): string {
  return encodeURIComponent(path.resolve(testFile));
}

/**
 * Starts services as separate processes, exactly as `npm start` does (compiled output, telemetry
 * preloaded), and waits for each to report ready.
 */
export class ServiceHarness {
  readonly services: RunningService[] = [];

  /**
   * `nodeArgs`: extra Node.js flags for every service process (e.g. `--cpu-prof`, which NODE_OPTIONS refuses).
   * `roleEnv`: environment for every instance of one role (its own NATS user), over `env`.
   */
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly nodeArgs: readonly string[] = [],
    private readonly roleEnv: Partial<Record<ServiceName, NodeJS.ProcessEnv>> = {},
  ) {}

  /**
   * `codeRoot`: the checkout whose built services run (by default this one). Another release's built
   * checkout runs it beside this one's replicas, as a rolling deployment does between two releases.
   */
  async start(name: ServiceName, extraEnv: NodeJS.ProcessEnv = {}, instance: string = name, codeRoot: string = repoRoot): Promise<RunningService> {
    // Starting an instance that died replaces it (fault tests restart what they killed).
    const dead = this.services.findIndex((s) => s.instance === instance && (s.child.exitCode !== null || s.child.signalCode !== null));
    if (dead >= 0) this.services.splice(dead, 1);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, ...this.env, ...this.roleEnv[name], ...extraEnv, PORT: String(port), HOST: '127.0.0.1', OTEL_SERVICE_NAME: `conveyor-${name}` };
    const child = spawn(process.execPath, [...this.nodeArgs, '--enable-source-maps', '--import', '@conveyor/telemetry/register', path.join(codeRoot, `services/${name}/dist/main.js`)], {
      cwd: path.join(codeRoot, `services/${name}`),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs: string[] = [];
    const file = serviceLogFile(instance, child.pid);
    const collect = (d: Buffer) => {
      file?.write(d);
      for (const line of d.toString().split('\n')) if (line) logs.push(line);
      if (logs.length > MAX_LOG_LINES) logs.splice(0, logs.length - MAX_LOG_LINES);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Closed once both pipes have ended (after 'exit' a pipe can still hold the last lines).
    if (file) child.once('close', () => file.end());
    const url = `http://127.0.0.1:${port}`;
    const healthUrl = env.METRICS_PORT ? `http://127.0.0.1:${env.METRICS_PORT}` : url;
    const svc: RunningService = { name, instance, port, url, healthUrl, child, logs, exited };
    this.services.push(svc);
    await waitUntil(`${instance} ready`, async () => {
      if (child.exitCode !== null) throw new Error(`${instance} exited with ${child.exitCode}:\n${logs.slice(-20).join('\n')}`);
      const res = await fetch(`${svc.healthUrl}/health/ready`).catch(() => undefined);
      return res?.status === 200;
      // Generous: several services booting at once on a loaded two-core machine take a while.
    }, 90_000, 100);
    return svc;
  }

  async startAll(extraEnv: NodeJS.ProcessEnv = {}): Promise<Record<ServiceName, RunningService>> {
    const started = await Promise.all(ALL_SERVICES.map((n) => this.start(n, extraEnv)));
    return Object.fromEntries(started.map((s) => [s.name, s])) as Record<ServiceName, RunningService>;
  }

  get(instance: string): RunningService {
    const svc = this.services.find((s) => s.instance === instance);
    if (!svc) throw new Error(`no service ${instance}`);
    return svc;
  }

  kill(instance: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    const svc = this.get(instance);
    svc.child.kill(signal);
    return svc.exited;
  }

  /** Stops every service with SIGTERM (their graceful path), SIGKILL after a grace period. */
  async stopAll(graceMs = 10_000): Promise<void> {
    await Promise.all(
      this.services.map(async (svc) => {
        if (svc.child.exitCode !== null || svc.child.signalCode !== null) return;
        svc.child.kill('SIGTERM');
        const timer = setTimeout(() => svc.child.kill('SIGKILL'), graceMs);
        await svc.exited;
        clearTimeout(timer);
      }),
    );
  }

  /** Every log line of every service, for assertions and for failure messages. */
  allLogs(): string {
    return this.services.map((s) => s.logs.map((l) => `${s.instance}| ${l}`).join('\n')).join('\n');
  }
}
