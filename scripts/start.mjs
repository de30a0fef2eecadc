// `npm start`: check that the services' ports are free and the backends answer (running its own NATS,
// Redis and Postgres under the data folder when they do not and no URL was given), set up what is
// missing (install, build, migrate, load conveyor.yaml), then run the message path's four services,
// the gateway, the sandbox (when bubblewrap is installed) and the admin API as separate processes.
// The terminal gets one line per service when it is ready, the links, and warnings and errors; each
// service's whole JSON log goes to the data folder's logs/ (`--verbose` prints it too). SIGINT
// (Ctrl-C), SIGTERM or SIGHUP drains and stops them all, then the backends it started; the script
// exits once every one has. CONVEYOR_START_SKIP_BUILD=1 skips install and build (tests run it on a
// tree they built, where building again would race other builds). CONVEYOR_HOME moves the data folder
// (default .conveyor/ in the project).
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, existsSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './ensure-built.mjs';
import { BACKENDS, ensureBackends, shownPath, stopBackends } from './start/backends.mjs';
import { serviceOutput } from './start/output.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const verbose = process.argv.includes('--verbose') || process.argv.includes('-v');
// URLs and settings in .env count as given, as in the environment.
if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));
const env = { ...process.env };
const given = new Set(BACKENDS.map((b) => b.variable).filter((v) => env[v] !== undefined && env[v] !== ''));
const home = path.resolve(env.CONVEYOR_HOME || path.join(root, '.conveyor'));
const say = (line) => console.log(`conveyor: ${line}`);
const warn = (line) => console.error(`conveyor: ${line}`);
// The example model reads its key from LLM_API_KEY; the local fake needs none.
env.LLM_API_KEY ??= '';
// Stdio MCP servers run in the sandbox. Without it (below), on your own machine they may start in the
// runner through npx or node (the example's commented-out filesystem server does); the deployments
// run them in the sandbox, or in the runner only with commands MCP_STDIO_COMMANDS lists.
env.MCP_STDIO_COMMANDS ??= 'npx,node';
// The web chat (/chat) is how the quickstart talks to a bot. It can drive every bot, so the ingress
// serves it only behind a token: unless WEBCHAT_ENABLED is set either way, it is switched on here with
// a token made for this run, printed in the link once the ingress is up.
const webChatTokenMade = env.WEBCHAT_ENABLED === undefined && !env.WEBCHAT_TOKEN;
if (env.WEBCHAT_ENABLED === undefined) {
  env.WEBCHAT_ENABLED = 'true';
  if (webChatTokenMade) env.WEBCHAT_TOKEN = randomBytes(24).toString('base64url');
}
env.CONVEYOR_CONFIG ??= existsSync(path.join(root, 'conveyor.yaml')) ? path.join(root, 'conveyor.yaml') : path.join(root, 'conveyor.example.yaml');

/** Where `command` is found on PATH (or itself, when it is a path), or undefined. */
function executable(command) {
  const candidates = command.includes('/') ? [command] : (env.PATH ?? '').split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, command));
  return candidates.find((file) => {
    try {
      accessSync(file, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

// The sandbox runs the agent's commands under bubblewrap and util-linux's prlimit (Linux only). Without
// them it could only fail its start-up check, so it is left out, saying so: the rest runs, and a
// pipeline that uses the sandbox is told that no sandbox replica is running.
const sandboxTools = [env.SANDBOX_BWRAP_PATH || 'bwrap', env.SANDBOX_PRLIMIT_PATH || 'prlimit'];
const missingSandboxTools = sandboxTools.filter((t) => !executable(t));
if (missingSandboxTools.length) {
  warn(`not starting the sandbox (the agent's exec, read, write, edit, glob and grep tools; stdio MCP servers run in the runner instead): ${missingSandboxTools.join(' and ')} not found. On Debian or Ubuntu: apt install bubblewrap util-linux`);
  env.MCP_STDIO_IN ??= 'runner';
}

const services = [
  ['ingress', 8080],
  ['orchestrator', 8081],
  ['runner', 8082],
  ['dispatcher', 8083],
  // Holds the live connections of connection platforms (OneBot); idle without such bots.
  ['gateway', 8085],
  ['admin', 8084],
  // Runs the agent's commands, asked by the runners over NATS; its port serves health and metrics.
  ...(missingSandboxTools.length ? [] : [['sandbox', 8086]]),
].map(([name, defaultPort]) => {
  const portVariable = `${name.toUpperCase()}_PORT`;
  return { name, portVariable, port: Number(env[portVariable] ?? defaultPort) };
});
const host = env.HOST ?? '0.0.0.0';

/** Why a service could not listen on `port`, or undefined when it can. */
function portProblem(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err) => resolve(err.code === 'EADDRINUSE' ? 'is already in use' : `cannot be listened on (${err.code})`));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

// Before the build and the migration: a second `npm start` should say so at once, not after a minute.
let portsBusy = false;
for (const { name, portVariable, port } of services) {
  const problem = await portProblem(port);
  if (!problem) continue;
  portsBusy = true;
  warn(`port ${port} (${name}) ${problem} on ${host}. Stop what holds it (is Conveyor already running?) or set ${portVariable}.`);
}
if (portsBusy) process.exit(1);

// The backends: the ones that answer are used; the others, unless their URL was given, run here.
let stopping = false;
const backends = { started: [] };
const stopEarly = () => {
  stopping = true;
  void stopBackends(backends.started).then(() => process.exit(130));
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, stopEarly);
mkdirSync(home, { recursive: true });
const pidFile = path.join(home, 'start.pid');
writeFileSync(pidFile, String(process.pid));
const ensured = await ensureBackends({ env, given, home, say });
backends.started = ensured.started;
if (ensured.problems.length) {
  for (const problem of ensured.problems) warn(problem);
  rmSync(pidFile, { force: true });
  process.exit(1);
}
if (stopping) await new Promise(() => {});
for (const backend of BACKENDS) env[backend.variable] ??= backend.defaultUrl;

try {
  if (env.CONVEYOR_START_SKIP_BUILD !== '1') ensureBuilt();
  execFileSync(process.execPath, [path.join(root, 'libs/config/dist/cli/setup.js')], { cwd: root, stdio: verbose ? 'inherit' : ['ignore', 'ignore', 'inherit'], env });
} catch (err) {
  warn(`set-up failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  await stopBackends(backends.started);
  rmSync(pidFile, { force: true });
  process.exit(1);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(signal, stopEarly);

const graceMs = ((Number(env.SHUTDOWN_GRACE_SECONDS) || 25) + 5) * 1000;
/** The services, each with `closed`: settled once it exited and its last output is printed. */
const children = [];

/** Drains every service with one SIGTERM each (SIGKILL past their grace period), then stops the backends started here, and exits. */
function stop(code) {
  if (stopping) {
    // A service that gets a second SIGTERM while draining dies mid-drain; its one signal has been sent.
    console.error('conveyor: already stopping; waiting for the services to drain');
    return;
  }
  stopping = true;
  for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const deadline = setTimeout(() => { for (const { child } of children) child.kill('SIGKILL'); }, graceMs);
  Promise.all(children.map(({ closed }) => closed)).then(async () => {
    clearTimeout(deadline);
    if (backends.started.length) {
      say(`stopping ${backends.started.map((b) => b.name).join(', ')} (the data stays in ${shownPath(home)}; npm run reset deletes it)`);
      await stopBackends(backends.started);
    }
    rmSync(pidFile, { force: true });
    process.exit(code);
  });
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(0));

/** The admin service's public URL, and the ingress its console's debug chat relays to (with the web chat token all services get). */
function adminEnv(port) {
  const ingressPort = services.find((s) => s.name === 'ingress').port;
  return {
    ADMIN_PUBLIC_URL: env.ADMIN_PUBLIC_URL ?? `http://${shownHost()}:${port}`,
    ADMIN_INGRESS_URL: env.ADMIN_INGRESS_URL ?? `http://127.0.0.1:${ingressPort}`,
  };
}

const colors = [36, 35, 33, 32, 34, 31, 96];
for (const [i, { name, port }] of services.entries()) {
  const child = spawn(process.execPath, ['--enable-source-maps', '--import', '@conveyor/telemetry/register', path.join(root, `services/${name}/dist/main.js`)], {
    cwd: path.join(root, `services/${name}`),
    env: { ...env, PORT: String(port), OTEL_SERVICE_NAME: `conveyor-${name}`, ...(name === 'admin' ? adminEnv(port) : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own: Ctrl-C or a signal to this script's group reaches the service only
    // through this script, exactly once, instead of twice.
    detached: true,
  });
  const tag = `\x1b[${colors[i % colors.length]}m${name.padEnd(12)}\x1b[0m| `;
  const output = serviceOutput({ logFile: path.join(home, 'logs', `${name}.log`), verbose, print: (line) => process.stdout.write(tag + line + '\n') });
  output.attach(child.stdout);
  output.attach(child.stderr);
  // 'close', not 'exit': the service's last lines are printed before this one.
  const closed = new Promise((resolve) => child.once('close', (code, signal) => {
    process.stdout.write(`${tag}exited (${signal ?? code})\n`);
    if (!stopping) stop(code ?? 1);
    void output.close().then(resolve);
  }));
  children.push({ child, closed });
}

/** The host as a browser should write it. */
function shownHost() {
  return ['0.0.0.0', '::', ''].includes(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host;
}

/** Waits until the service answers ready; false when stopping first. */
async function whenReady(name) {
  const { port } = services.find((s) => s.name === name);
  const probe = ['0.0.0.0', '::', ''].includes(host) ? '127.0.0.1' : shownHost();
  while (!stopping) {
    const ready = await fetch(`http://${probe}:${port}/health/ready`).then((r) => r.ok, () => false);
    if (ready) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

// One line per service once it answers ready.
for (const { name, port } of services) void whenReady(name).then((ready) => ready && say(`${name} ready (port ${port})`));

/** Prints where the admin API is and how to sign in, once it answers. */
async function announceAdmin() {
  if (!(await whenReady('admin'))) return;
  const url = `http://${shownHost()}:${services.find((s) => s.name === 'admin').port}`;
  console.log(`conveyor: admin API at ${url}/api/v1 (OpenAPI at ${url}/api/docs), web console at ${url}/; sign in as ${env.CONVEYOR_ADMIN_USER || 'admin'} with CONVEYOR_ADMIN_PASSWORD, or on the first start through the one-time setup link above`);
}
void announceAdmin();

/** Prints the web chat's link (with the token this script made; a token of your own is not echoed) once the ingress answers. */
async function announceWebChat() {
  const ingress = services.find((s) => s.name === 'ingress');
  const shown = shownHost();
  if (!(await whenReady('ingress'))) return;
  const link = `http://${shown}:${ingress.port}/chat`;
  console.log(webChatTokenMade
    ? `conveyor: web chat at ${link}#token=${env.WEBCHAT_TOKEN}  (token made for this run; set WEBCHAT_TOKEN to choose one, WEBCHAT_ENABLED=false to turn it off)`
    : `conveyor: web chat at ${link}  (it asks for WEBCHAT_TOKEN)`);
}
if (['1', 'true', 'yes', 'on', 'y', 'enabled'].includes(env.WEBCHAT_ENABLED.toLowerCase())) void announceWebChat();
