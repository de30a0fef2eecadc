/**
 * The deploy conformance check: one target (the dev or prod overlay, or the compose file) read into
 * workloads, started as the engine would start them inside a network namespace of their own, each
 * probed with its manifest's own probes and thresholds; on the targets that ship fakes, one message
 * sent through the HTTP-bot webhook and answered; on every target, one call to the sandbox role over
 * NATS with the runner's own credentials, run under bubblewrap and answered. The result is a report
 * per workload.
 *
 *   ip netns exec <ns> node test/dist/deploy/conformance.js <dev|prod|compose> <report.json>
 *
 * conformance.test.ts creates the namespace, runs this and turns the report into assertions.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { topology } from '@conveyor/contracts';
import { connectBus } from '@conveyor/bus';
import { sign } from '@conveyor/http-bot';
import { SandboxClient } from '@conveyor/sandbox';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { startOtlpReceiver, type OtlpReceiver } from '../fakes/otlp-receiver.js';
import { composeConfig, composeWorkloads, conveyorStage, dockerfileStages, kubeWorkloads, renderOverlay, type Container, type Probe, type ProvidedSecrets, type Workload } from './artifacts.js';
import { natsServerConfig, passwordVariable, SERVICE_ROLES } from './nats-config.js';
import { localImage, PodNetwork, type RunningContainer } from './pod-network.js';

export type Target = 'dev' | 'prod' | 'compose';
export const TARGETS: Target[] = ['dev', 'prod', 'compose'];

export interface ContainerReport {
  workload: string;
  container: string;
  image: string;
  stage?: string;
  argv: string[];
  /** Seconds the manifest allows before the startup (or, without one, the readiness) probe must pass. */
  budgetSeconds: number;
  /**
   * Seconds the suite waited for the probes: the budget times the slack a loaded test machine is given
   * (process start-up, and Postgres's first initdb, run several times slower beside the other suites).
   */
  allowedSeconds?: number;
  /** Seconds from the container's first start to its startup probe passing, then its readiness probe. */
  startedSeconds?: number;
  readySeconds?: number;
  /** Seconds from the suite's start to the container's first start (what it waited for). */
  launchedAtSeconds?: number;
  restarts: number;
  /** Exits after the container had become ready, while the suite was not stopping it. */
  crashesAfterReady: number;
  exits: { code: number | null; signal: string | null }[];
  problem?: string;
  logTail: string[];
}

export interface ConformanceReport {
  target: Target;
  workloads: { name: string; kind: string; hostnames: string[] }[];
  containers: ContainerReport[];
  message?: { sent: boolean; status?: number; answer?: string; problem?: string };
  spans?: { count: number; services: string[]; environments: string[]; instanceIds: string[] };
  /** A target that ships a NATS cluster (prod): how it formed, and a stream the services made on it. */
  natsCluster?: NatsClusterReport;
  sandbox?: SandboxCallReport;
  problems: string[];
}

/**
 * One workspace asked twice through the sandbox role, as a runner asks it: a command that writes a
 * file (run under bubblewrap, the workspace then packed by tar and stored in Postgres), then that file
 * read back.
 */
export interface SandboxCallReport {
  /** The NATS user the call was made as: the runner's, from the runner's own environment. */
  user?: string;
  exec?: { exitCode: number | null; stdout: string; stderr: string; revision: number };
  read?: { text: string; revision: number };
  problem?: string;
}

export interface NatsClusterReport {
  /** Each node (pod) as its monitoring port describes it: its server name and whom it routes to. */
  nodes: { pod: string; serverName?: string; routesTo: string[] }[];
  metaLeader?: string;
  metaClusterSize?: number;
  /** NATS_STREAM_REPLICAS as the services were given it. */
  streamReplicasSetting?: string;
  stream?: { name: string; numReplicas: number; leader?: string; replicas: string[] };
  problem?: string;
}

const DOCKERFILE = path.join(repoRoot, 'Dockerfile');
const PROD_FAKES_HOST = 'third-parties.conformance.test';

/** The values an operator puts into prod's Secrets (they are not in git); fresh for every run. */
export function prodSecrets(): { secrets: ProvidedSecrets; natsPasswords: Record<string, string>; dbPassword: string } {
  const natsPasswords = Object.fromEntries([...SERVICE_ROLES, 'plugin', 'ops'].map((r) => [r, 'p' + randomBytes(12).toString('hex')]));
  const dbPassword = 'db' + randomBytes(8).toString('hex');
  return {
    natsPasswords,
    dbPassword,
    secrets: {
      'conveyor-nats-credentials': natsPasswords,
      'conveyor-admin': { CONVEYOR_SECRET_KEY: randomBytes(32).toString('base64'), CONVEYOR_ADMIN_PASSWORD: 'a' + randomBytes(12).toString('hex') },
      'conveyor-database': { DATABASE_URL: `postgresql://conveyor:${dbPassword}@postgres.data.svc.cluster.local:5432/conveyor` },
      'conveyor-redis': { REDIS_URL: 'redis://redis.data.svc.cluster.local:6379' },
      'conveyor-llm': { LLM_API_KEY: 'sk-' + randomBytes(8).toString('hex') },
      // The model and the integrator are third parties: the suite's own fakes stand in for them.
      'conveyor-config-env': { LLM_BASE_URL: `http://${PROD_FAKES_HOST}:8090/v1`, HTTP_BOT_INBOUND_SECRET: randomBytes(16).toString('hex'), HTTP_BOT_CALLBACK_URL: `http://${PROD_FAKES_HOST}:8091/callback` },
      // The CA and the servers' certificate are made when the run starts (for the servers' names).
      'conveyor-nats-tls': { 'ca.crt': '' },
      'conveyor-nats-server-tls': { 'ca.crt': '', 'tls.crt': '', 'tls.key': '' },
    },
  };
}

/**
 * The compose file's variables as a first user makes them: the command .env.example documents,
 * run as written (its output is what `.env` would hold).
 */
export function composeEnv(): Record<string, string> {
  const example = readFileSync(path.join(repoRoot, '.env.example'), 'utf8');
  const command = /^#\s+(awk .*) > \.env$/m.exec(example)?.[1];
  if (!command) throw new Error('.env.example no longer documents the command that fills it in');
  const filled = execFileSync('/bin/sh', ['-c', command], { cwd: repoRoot, encoding: 'utf8' });
  const env: Record<string, string> = {};
  for (const line of filled.split('\n')) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

export interface TargetWorkloads {
  workloads: Workload[];
  /** prod: the backends an operator runs outside the namespace, started here as the suite's own. */
  externals: Workload[];
  prod?: ReturnType<typeof prodSecrets>;
}

function external(name: string, hostnames: string[], image: string, argv: string[], env: Record<string, string>, dirs: string[], files: Container['files'], readiness: Probe): Workload {
  return {
    source: 'external',
    kind: 'backend',
    name,
    podName: name,
    init: [],
    containers: [{ name, image, argv, workdir: '/', env, files, dirs, binds: {}, readOnlyRootFilesystem: false, readiness, ports: {} }],
    restart: false,
    dependsOn: [],
    hostnames,
  };
}

/** The workloads of a target, read from the artifacts. Pure: safe to call outside the namespace. */
export function targetWorkloads(target: Target, prod = prodSecrets(), compose = composeEnv()): TargetWorkloads {
  const stages = dockerfileStages(DOCKERFILE);
  if (target === 'compose') {
    const profiles = ['fakes'];
    const config = composeConfig(path.join(repoRoot, 'docker-compose.yml'), repoRoot, compose, profiles);
    // What `docker compose --profile fakes up` starts: services of other profiles (monitoring's
    // Prometheus and Grafana, third-party images with no local equivalent) stay out.
    for (const [name, svc] of Object.entries<{ profiles?: string[] }>(config.services ?? {})) {
      if (svc.profiles && !svc.profiles.some((p) => profiles.includes(p))) delete config.services[name];
    }
    return { workloads: composeWorkloads(config, repoRoot, stages), externals: [] };
  }
  const objects = renderOverlay(path.join(repoRoot, 'k8s/overlays', target));
  if (target === 'dev') return { workloads: kubeWorkloads('dev', objects, stages), externals: [] };
  const workloads = kubeWorkloads('prod', objects, stages, prod.secrets);
  const http = (port: number, p: string): Probe => ({ kind: 'http', path: p, port, initialDelaySeconds: 0, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 60 });
  const natsHost = new URL(workloads[0]!.containers[0]!.env.NATS_URL!.split(',')[0]!).hostname;
  // A managed NATS (the overlay ships none): the suite's own, one server.
  const natsShipped = workloads.some((w) => w.hostnames.includes(natsHost));
  const externals = [
    ...(natsShipped ? [] : [external('nats', [natsHost], 'nats:external', ['-c', '/etc/nats/nats.conf', '-js'], Object.fromEntries(Object.entries(prod.natsPasswords).map(([r, p]) => [passwordVariable(r as never), p])), ['/data'], [], http(8222, '/healthz?js-enabled-only=true'))]),
    external('redis', ['redis.data.svc.cluster.local'], 'redis:external', ['redis-server', '--save', '', '--appendonly', 'no'], {}, [], [], { kind: 'exec', command: ['redis-cli', 'ping'], initialDelaySeconds: 0, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 60 }),
    external('postgres', ['postgres.data.svc.cluster.local'], 'postgres:external', [], { POSTGRES_USER: 'conveyor', POSTGRES_PASSWORD: prod.dbPassword, POSTGRES_DB: 'conveyor' }, ['/var/lib/postgresql/data', '/var/run/postgresql'], [], { kind: 'exec', command: ['pg_isready', '-h', '127.0.0.1', '-U', 'conveyor', '-d', 'conveyor'], initialDelaySeconds: 0, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 60 }),
  ];
  const collector = new URL(workloads[0]!.containers[0]!.env.OTEL_EXPORTER_OTLP_ENDPOINT!).hostname;
  externals.push(external('otel-collector', [collector], 'otel/opentelemetry-collector:external', [], {}, [], [], http(4318, '/')));
  const fakesStage = stages.get('dev-fakes')!;
  const fakes = external('third-parties', [PROD_FAKES_HOST], 'conveyor/dev-fakes:external', [...fakesStage.entrypoint, ...fakesStage.cmd], { ...fakesStage.env, HTTP_BOT_INBOUND_SECRET: prod.secrets['conveyor-config-env']!.HTTP_BOT_INBOUND_SECRET! }, [], [], http(8090, '/v1/models'));
  fakes.containers[0]!.workdir = fakesStage.workdir;
  fakes.containers[0]!.appTree = { build: true };
  externals.push(fakes);
  return { workloads, externals, prod };
}

/**
 * The namespace's hosts file: every name a workload of the target is reached by, at the workload's
 * address (its own, or the shared loopback). A Service over several pods resolves to the first.
 */
export function targetHosts(t: TargetWorkloads): string {
  const byAddress = new Map<string, string[]>([['127.0.0.1', ['localhost']]]);
  const seen = new Set<string>(['localhost']);
  for (const w of [...t.workloads, ...t.externals]) {
    const address = w.address ?? '127.0.0.1';
    const names = byAddress.get(address) ?? [];
    for (const h of w.hostnames) if (!seen.has(h)) names.push(h), seen.add(h);
    byAddress.set(address, names);
  }
  return [...[...byAddress].filter(([, names]) => names.length).map(([address, names]) => `${address} ${names.join(' ')}`), '::1 localhost', ''].join('\n');
}

/** The NATS servers' workloads: the target's NATS pods, or the suite's own for a managed one. */
function natsWorkloads(spec: TargetWorkloads): Workload[] {
  return [...spec.workloads, ...spec.externals].filter((w) => localImage(w.containers[0]!.image) === 'nats');
}

function budgetOf(c: Container): number {
  const p = c.startup ?? c.readiness;
  if (!p) return 60;
  return p.initialDelaySeconds + p.periodSeconds * p.failureThreshold;
}

/**
 * A TLS certificate for `hosts` and the CA that signed it, made with openssl for this run: the servers'
 * certificate for clients and, between a cluster's nodes, for both ends of a route.
 */
function makeCertificates(dir: string, hosts: string[]): { ca: string; cert: string; key: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=conveyor-conformance-ca');
  run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${hosts[0]}`);
  writeFileSync(path.join(dir, 'san.ext'), `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(',')}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'san.ext');
  return { ca: readFileSync(path.join(dir, 'ca.crt'), 'utf8'), cert: readFileSync(path.join(dir, 'server.crt'), 'utf8'), key: readFileSync(path.join(dir, 'server.key'), 'utf8') };
}

class Supervisor {
  readonly reports = new Map<Container, ContainerReport>();
  private stopping = false;

  constructor(private readonly net: PodNetwork, private readonly t0: number) {}

  private report(w: Workload, c: Container): ContainerReport {
    let r = this.reports.get(c);
    if (!r) {
      const stage = conveyorStage(c.image);
      r = { workload: w.name, container: c.name, image: c.image, ...(stage ? { stage } : {}), argv: c.argv, budgetSeconds: budgetOf(c), restarts: 0, crashesAfterReady: 0, exits: [], logTail: [] };
      this.reports.set(c, r);
    }
    return r;
  }

  /** Runs a container until it exits, restarting it as its policy says (with the kubelet's growing back-off). */
  private async runContainer(w: Workload, c: Container, restart: boolean): Promise<{ code: number | null }> {
    const r = this.report(w, c);
    let backoff = 1_000;
    for (;;) {
      r.launchedAtSeconds ??= (Date.now() - this.t0) / 1000;
      const running = this.net.start(w, c);
      const exit = await running.exited;
      r.exits.push({ code: exit.code, signal: exit.signal });
      r.logTail = running.logs.slice(-25);
      if (this.stopping || !restart) return exit;
      if (r.readySeconds !== undefined) r.crashesAfterReady++;
      r.restarts++;
      await new Promise((res) => setTimeout(res, backoff));
      backoff = Math.min(backoff * 2, 10_000);
      if (this.stopping) return exit;
    }
  }

  /** Starts the workload: init containers one after the other (each must exit 0), then the containers. */
  async start(w: Workload): Promise<void> {
    for (const c of w.init) {
      const exit = await this.runContainer(w, c, false);
      if (exit.code !== 0) {
        this.report(w, c).problem = `init container ${c.name} exited ${exit.code}`;
        if (!w.restart) return;
        // A pod whose init container fails is restarted as a whole by the kubelet.
        for (let attempt = 0; attempt < 5 && !this.stopping; attempt++) {
          await new Promise((res) => setTimeout(res, 2_000 * (attempt + 1)));
          const again = await this.runContainer(w, c, false);
          this.report(w, c).restarts++;
          if (again.code === 0) {
            delete this.report(w, c).problem;
            break;
          }
        }
        if (this.report(w, c).problem) return;
      }
    }
    for (const c of w.containers) void this.runContainer(w, c, w.restart);
  }

  /** Polls a container's startup then readiness probe at their periods, until the manifest's budget runs out (×3 on a loaded machine). */
  async probeUntilReady(w: Workload, c: Container, slack: number): Promise<void> {
    const r = this.report(w, c);
    for (let i = 0; i < 3000 && r.launchedAtSeconds === undefined && !this.stopping; i++) await new Promise((res) => setTimeout(res, 100));
    const launched = this.t0 + (r.launchedAtSeconds ?? 0) * 1000;
    r.allowedSeconds = r.budgetSeconds * slack;
    const deadline = launched + r.allowedSeconds * 1000;
    const current = (): RunningContainer | undefined => [...this.net.running].reverse().find((x) => x.container === c && !x.exit);
    const pass = async (p: Probe | undefined): Promise<boolean> => {
      if (!p) return true;
      if (p.initialDelaySeconds) await new Promise((res) => setTimeout(res, p.initialDelaySeconds * 1000));
      while (Date.now() < deadline && !this.stopping) {
        const rc = current();
        if (rc && (await this.net.probe(rc, p))) return true;
        // Exited for good: nothing left to probe.
        if (!rc && !w.restart && r.exits.length) return false;
        await new Promise((res) => setTimeout(res, Math.min(p.periodSeconds, 2) * 1000));
      }
      return false;
    };
    if (!(await pass(c.startup))) {
      r.problem ??= `startup probe did not pass within ${Math.round(r.budgetSeconds * slack)} s`;
      return;
    }
    if (c.startup) r.startedSeconds = (Date.now() - launched) / 1000;
    if (!(await pass(c.readiness))) {
      r.problem ??= `readiness probe did not pass within ${Math.round(r.budgetSeconds * slack)} s`;
      return;
    }
    r.readySeconds = (Date.now() - launched) / 1000;
    r.startedSeconds ??= r.readySeconds;
  }

  stop(): void {
    this.stopping = true;
  }
}

function signedHttpBotRequest(botId: string, secret: string, text: string): { url: string; init: RequestInit } {
  const body = JSON.stringify({ session_id: `conformance-${randomUUID()}`, sender: { name: 'Conformance' }, message: [{ type: 'Plain', text }] });
  const ts = String(Math.floor(Date.now() / 1000));
  return { url: `/bots/${botId}`, init: { method: 'POST', headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(secret, ts, body) }, body } };
}

/**
 * What each node's monitoring port says once the nodes are ready: its server name, the servers it has
 * routes to (by server id, mapped to names), and the JetStream meta leader, waited for (bounded)
 * until every node routes to every other and they agree on a leader.
 */
async function natsClusterFormation(nodes: Workload[]): Promise<NatsClusterReport> {
  const monitor = async <T>(w: Workload, p: string): Promise<T> => {
    const port = w.containers[0]!.ports.monitor ?? 8222;
    const res = await fetch(`http://${w.address}:${port}${p}`, { signal: AbortSignal.timeout(5_000) });
    return (await res.json()) as T;
  };
  const read = async (): Promise<NatsClusterReport> => {
    const varz = await Promise.all(nodes.map((w) => monitor<{ server_id: string; server_name: string }>(w, '/varz')));
    const names = new Map(varz.map((v) => [v.server_id, v.server_name]));
    const routez = await Promise.all(nodes.map((w) => monitor<{ routes?: { remote_id: string }[] }>(w, '/routez')));
    const jsz = await Promise.all(nodes.map((w) => monitor<{ meta_cluster?: { leader?: string; cluster_size?: number } }>(w, '/jsz')));
    const leaders = new Set(jsz.map((j) => j.meta_cluster?.leader ?? ''));
    return {
      nodes: nodes.map((w, i) => ({ pod: w.podName, serverName: varz[i]!.server_name, routesTo: [...new Set((routez[i]!.routes ?? []).map((r) => names.get(r.remote_id) ?? r.remote_id))].sort() })),
      ...(leaders.size === 1 && [...leaders][0] ? { metaLeader: [...leaders][0]! } : {}),
      ...(jsz[0]!.meta_cluster?.cluster_size !== undefined ? { metaClusterSize: jsz[0]!.meta_cluster.cluster_size } : {}),
    };
  };
  let last: NatsClusterReport = { nodes: nodes.map((w) => ({ pod: w.podName, routesTo: [] })) };
  try {
    return await waitUntil('the NATS cluster formed', async () => {
      last = await read();
      return last.metaLeader && last.nodes.every((n) => n.routesTo.length === nodes.length - 1) ? last : undefined;
    }, 60_000, 500);
  } catch (err) {
    return { ...last, problem: (err as Error).message };
  }
}

/**
 * The sandbox asked as a runner asks it: connected with the runner container's NATS settings (its user,
 * its password from its environment or its mounted Secret, the CA it is given) and the runner's inbox
 * prefix, so the shipped NATS permissions are the ones that let the call through.
 */
async function sandboxCall(runner: Container, scratch: string): Promise<SandboxCallReport> {
  const env: Record<string, string> = { ...runner.env };
  // The files the runner reads at paths inside its container, written where this process reads them.
  for (const variable of ['NATS_PASSWORD_FILE', 'NATS_TLS_CA_FILE', 'NATS_TLS_CERT_FILE', 'NATS_TLS_KEY_FILE']) {
    const inContainer = env[variable];
    if (!inContainer) continue;
    const mounted = runner.files.find((f) => f.path === inContainer);
    if (!mounted) return { problem: `the runner's ${variable} names ${inContainer}, which nothing mounts` };
    const here = path.join(scratch, `runner-${variable.toLowerCase()}`);
    writeFileSync(here, mounted.content, { mode: 0o600 });
    env[variable] = here;
  }
  const report: SandboxCallReport = { ...(env.NATS_USER ? { user: env.NATS_USER } : {}) };
  const topo = topology(env.CONVEYOR_SUBJECT_PREFIX || 'conveyor');
  let nc: Awaited<ReturnType<typeof connectBus>> | undefined;
  try {
    nc = await connectBus({ url: env.NATS_URL!, name: 'conformance-runner', env, extra: { inboxPrefix: topo.subjects.inboxPrefix('runner'), timeout: 10_000 } });
    const client = new SandboxClient({ nc, topology: topo, overheadMs: 60_000 });
    const workspace = `conformance/${randomUUID()}`;
    const exec = await client.call({ v: 1, workspace, call: { op: 'exec', command: 'echo ok | tee greeting.txt', timeoutSec: 30 } });
    if (!exec.ok) return { ...report, problem: `exec answered ${exec.code}: ${exec.error}` };
    report.exec = { exitCode: exec.exec?.exitCode ?? null, stdout: exec.exec?.stdout ?? '', stderr: exec.exec?.stderr ?? '', revision: exec.revision };
    const read = await client.call({ v: 1, workspace, call: { op: 'read', path: '/workspace/greeting.txt' } });
    if (!read.ok) return { ...report, problem: `read answered ${read.code}: ${read.error}` };
    report.read = { text: read.text ?? '', revision: read.revision };
  } catch (err) {
    report.problem = (err as Error).message;
  } finally {
    await nc?.close().catch(() => undefined);
  }
  return report;
}

/** A stream of the contract as JetStream describes it, through the services' NATS_URL as the operators' user. */
async function clusterStream(natsUrl: string, opsPassword: string, caFile: string): Promise<NonNullable<NatsClusterReport['stream']>> {
  const name = topology('conveyor').streams.queries.name;
  const nc = await connect({ servers: natsUrl.split(','), user: 'ops', pass: opsPassword, tls: { caFile }, timeout: 10_000 });
  try {
    const jsm = await jetstreamManager(nc);
    // Both followers listed (a replica set being placed lists fewer for a moment).
    const info = await waitUntil(`stream ${name} with its replicas`, async () => {
      const i = await jsm.streams.info(name);
      return (i.cluster?.replicas ?? []).length >= i.config.num_replicas - 1 ? i : undefined;
    }, 30_000, 500);
    return { name, numReplicas: info.config.num_replicas, ...(info.cluster?.leader ? { leader: info.cluster.leader } : {}), replicas: (info.cluster?.replicas ?? []).map((r) => r.name).sort() };
  } finally {
    await nc.close();
  }
}

export async function runConformance(target: Target, log: (line: string) => void = () => undefined): Promise<ConformanceReport> {
  const report: ConformanceReport = { target, workloads: [], containers: [], problems: [] };
  const spec = targetWorkloads(target);
  report.workloads = spec.workloads.map((w) => ({ name: w.name, kind: w.kind, hostnames: w.hostnames }));
  const scratch = mkdtempSync(path.join(repoRoot, '.conformance-'));
  // Each role's /app is the tree its Dockerfile stage copies there, made by the same script.
  const trees = new Map<string, string>();
  const appDir = (c: Container): string => {
    if (!c.appTree || 'build' in c.appTree) return repoRoot;
    const role = c.appTree.role;
    let dir = trees.get(role);
    if (!dir) {
      dir = path.join(scratch, 'trees', role);
      execFileSync(process.execPath, [path.join(repoRoot, 'scripts/role-tree.mjs'), role, dir, '--link'], { stdio: ['ignore', 'ignore', 'inherit'] });
      trees.set(role, dir);
    }
    return dir;
  };
  const net = new PodNetwork(appDir, log);
  const t0 = Date.now();
  const sup = new Supervisor(net, t0);
  let otlp: OtlpReceiver | undefined;
  try {
    execFileSync('ip', ['link', 'set', 'lo', 'up']);
    // The images exist before anything starts: every role's tree is made first.
    for (const w of [...spec.workloads, ...spec.externals]) for (const c of [...w.init, ...w.containers]) if (c.appTree) appDir(c);
    // Trace collectors (Jaeger, the OpenTelemetry Collector) are the test's OTLP receiver.
    const collectors = [...spec.workloads, ...spec.externals].filter((w) => /jaegertracing|opentelemetry-collector/.test(w.containers[0]!.image));
    if (collectors.length) otlp = await startOtlpReceiver({ port: 4318, host: '0.0.0.0' });
    const others = [...spec.externals.filter((w) => !collectors.includes(w))];
    if (spec.prod) {
      const servers = natsWorkloads(spec);
      const certs = makeCertificates(scratch, [...new Set(servers.flatMap((w) => w.hostnames))]);
      const external = spec.externals.find((w) => w.name === 'nats')?.containers[0];
      external?.files.push(
        { path: '/etc/nats/nats.conf', content: Buffer.from(natsServerConfig() + `\ntls {\n  cert_file: "/etc/nats-tls/server.crt"\n  key_file: "/etc/nats-tls/server.key"\n}\n`), mode: 0o644 },
        { path: '/etc/nats-tls/server.crt', content: Buffer.from(certs.cert), mode: 0o644 },
        { path: '/etc/nats-tls/server.key', content: Buffer.from(certs.key), mode: 0o600 },
      );
      // The Secrets' contents, wherever they are mounted: the CA for the clients, certificate and key for the servers.
      const made: Record<string, Record<string, string>> = {
        'conveyor-nats-tls': { 'ca.crt': certs.ca },
        'conveyor-nats-server-tls': { 'ca.crt': certs.ca, 'tls.crt': certs.cert, 'tls.key': certs.key },
      };
      for (const w of spec.workloads) {
        for (const c of [...w.init, ...w.containers]) {
          for (const f of c.files) {
            const content = f.source?.kind === 'Secret' ? made[f.source.name]?.[f.source.key] : undefined;
            if (content !== undefined) f.content = Buffer.from(content);
          }
        }
      }
      writeFileSync(path.join(scratch, 'nats-ca.crt'), certs.ca);
    }
    for (const w of others) {
      await sup.start(w);
      await sup.probeUntilReady(w, w.containers[0]!, 1);
      const r = sup.reports.get(w.containers[0]!)!;
      if (r.problem) report.problems.push(`the suite's own ${w.name} did not start: ${r.problem}\n${r.logTail.join('\n')}`);
    }
    const runnable = spec.workloads.filter((w) => !collectors.includes(w));
    if (target === 'compose') {
      // compose starts a service once what it depends on is healthy, started or completed.
      const done = new Map<string, Promise<void>>();
      const startCompose = (w: Workload): Promise<void> => {
        const existing = done.get(w.name);
        if (existing) return existing;
        const p = (async () => {
          for (const d of w.dependsOn) {
            const dep = runnable.find((x) => x.name === d.name);
            if (!dep) continue;
            await startCompose(dep);
            if (d.condition === 'service_completed_successfully') {
              const c = dep.containers[0]!;
              for (let i = 0; i < 600 && !sup.reports.get(c)?.exits.length; i++) await new Promise((res) => setTimeout(res, 200));
              const code = sup.reports.get(c)?.exits[0]?.code;
              if (code !== 0) throw new Error(`${w.name} waits for ${dep.name} to complete, which exited ${code}`);
            }
          }
          await sup.start(w);
          // A service others wait on for health gates them; the rest are probed below.
          if (w.containers[0]!.readiness) await sup.probeUntilReady(w, w.containers[0]!, 2);
        })();
        done.set(w.name, p);
        return p;
      };
      const results = await Promise.allSettled(runnable.map(startCompose));
      for (const r of results) if (r.status === 'rejected') report.problems.push(String((r.reason as Error).message));
    } else {
      // Kubernetes starts every pod at once; each becomes ready when what it needs is there.
      const ready = new Map(runnable.map((w) => [w, sup.start(w).then(() => Promise.all(w.containers.map((c) => sup.probeUntilReady(w, c, 2))))]));
      // A NATS cluster the target ships: formed once its nodes are ready?
      const nodes = runnable.filter((w) => w.address && localImage(w.containers[0]!.image) === 'nats');
      if (nodes.length > 1) {
        await Promise.all(nodes.map((w) => ready.get(w)));
        report.natsCluster = await natsClusterFormation(nodes);
      }
      await Promise.all(ready.values());
    }

    const ingress = runnable.find((w) => w.name === 'ingress')?.containers[0];
    const fakes = net.running.find((r) => r.container.image.includes('dev-fakes'));
    if (ingress && fakes) {
      report.message = { sent: false };
      try {
        const config = parseYaml(readFileSync(path.join(repoRoot, 'conveyor.example.yaml'), 'utf8')) as { bots: { id: string }[] };
        const botId = config.bots[0]!.id;
        const secret = fakes.container.env.HTTP_BOT_INBOUND_SECRET ?? '';
        const text = `conformance ${randomUUID()}`;
        const port = Number(ingress.env.PORT ?? ingress.ports.http ?? 8080);
        const req = signedHttpBotRequest(botId, secret, text);
        const res = await fetch(`http://127.0.0.1:${port}${req.url}`, req.init);
        report.message = { sent: true, status: res.status };
        await res.body?.cancel();
        const deadline = Date.now() + 90_000;
        const wanted = new RegExp(`final=true signature=ok: (.*${text}.*)$`);
        while (Date.now() < deadline) {
          const line = fakes.logs.map((l) => wanted.exec(l)).find(Boolean);
          if (line) {
            report.message.answer = line[1]!;
            break;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
        if (!report.message.answer) report.message.problem = `no final signed callback for "${text}" within 90 s; the integrator printed:\n${fakes.logs.slice(-10).join('\n')}`;
      } catch (err) {
        report.message.problem = (err as Error).message;
      }
    }
    // The agent's sandbox, asked as the runner asks it, on every target that ships both.
    const runner = runnable.find((w) => w.name === 'runner')?.containers[0];
    if (runnable.some((w) => w.name === 'sandbox') && runner) report.sandbox = await sandboxCall(runner, scratch);
    // The streams the services made on the cluster, after a message went through them.
    if (report.natsCluster && spec.prod && ingress) {
      const env = ingress.env;
      report.natsCluster.streamReplicasSetting = env.NATS_STREAM_REPLICAS;
      try {
        report.natsCluster.stream = await clusterStream(env.NATS_URL!, spec.prod.natsPasswords.ops!, path.join(scratch, 'nats-ca.crt'));
      } catch (err) {
        report.natsCluster.problem = `${report.natsCluster.problem ?? ''}stream: ${(err as Error).message}`;
      }
    }
  } catch (err) {
    report.problems.push((err as Error).stack ?? String(err));
  } finally {
    sup.stop();
    await net.stopAll();
    for (const r of net.running) {
      const rep = sup.reports.get(r.container);
      if (rep) rep.logTail = r.logs.slice(-25);
    }
    report.containers = [...sup.reports.values()];
    if (otlp) {
      // Every service flushes its spans when it stops: they are all in by now.
      const resources = otlp.spans.map((s) => s.resourceAttributes);
      report.spans = {
        count: otlp.spans.length,
        services: [...new Set(resources.map((r) => String(r['service.name'])))].sort(),
        environments: [...new Set(resources.map((r) => String(r['deployment.environment.name'])))].sort(),
        instanceIds: [...new Set(resources.map((r) => String(r['service.instance.id'])))].sort(),
      };
    }
    await otlp?.close();
    net.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  }
  return report;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [target, out] = process.argv.slice(2) as [Target, string];
  if (!TARGETS.includes(target) || !out) {
    console.error(`usage: conformance.js <${TARGETS.join('|')}> <report.json>`);
    process.exit(2);
  }
  const report = await runConformance(target, process.env.CONFORMANCE_VERBOSE ? (l) => console.error(l) : undefined);
  writeFileSync(out, JSON.stringify(report, null, 2));
  process.exit(0);
}
