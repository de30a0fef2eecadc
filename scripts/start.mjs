// `npm start`: set up what is missing (install, build, migrate, load conveyor.yaml), then run the four
// services as separate processes with prefixed logs. Ctrl-C stops them all.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './ensure-built.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env };
env.NATS_URL ??= 'nats://127.0.0.1:4222';
env.REDIS_URL ??= 'redis://127.0.0.1:6379';
env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/conveyor';
// The example model reads its key from LLM_API_KEY; the local fake needs none.
env.LLM_API_KEY ??= '';
env.CONVEYOR_CONFIG ??= existsSync(path.join(root, 'conveyor.yaml')) ? path.join(root, 'conveyor.yaml') : path.join(root, 'conveyor.example.yaml');

const HOW = {
  NATS: 'docker compose up -d nats   (or Debian: nats-server -js)',
  Redis: 'docker compose up -d redis   (or Debian: redis-server --daemonize yes)',
  PostgreSQL: 'docker compose up -d postgres   (or Debian: pg_ctlcluster 15 main start)',
};

function reachable(url, defaultPort) {
  const u = new URL(url.split(',')[0]);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort), timeout: 2000 });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => { socket.destroy(); resolve(false); });
  });
}

const deps = [['NATS', env.NATS_URL, 4222], ['Redis', env.REDIS_URL, 6379], ['PostgreSQL', env.DATABASE_URL, 5432]];
const down = [];
for (const [name, url, port] of deps) if (!(await reachable(url, port))) down.push(name);
if (down.length) {
  for (const name of down) {
    const url = env[{ NATS: 'NATS_URL', Redis: 'REDIS_URL', PostgreSQL: 'DATABASE_URL' }[name]].replace(/\/\/([^@/]*)@/, '//***@');
    console.error(`conveyor: ${name} is not reachable at ${url}. Start it: ${HOW[name]}`);
  }
  process.exit(1);
}

ensureBuilt();
execFileSync(process.execPath, [path.join(root, 'libs/persistence/dist/cli/setup.js')], { cwd: root, stdio: 'inherit', env });

const services = [
  ['ingress', 8080],
  ['orchestrator', 8081],
  ['runner', 8082],
  ['dispatcher', 8083],
];
const colors = [36, 35, 33, 32];
const children = services.map(([name, port], i) => {
  const child = spawn(process.execPath, ['--enable-source-maps', '--import', '@conveyor/telemetry/register', path.join(root, `services/${name}/dist/main.js`)], {
    cwd: path.join(root, `services/${name}`),
    env: { ...env, PORT: env[`${name.toUpperCase()}_PORT`] ?? String(port), OTEL_SERVICE_NAME: `conveyor-${name}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tag = `\x1b[${colors[i]}m${name.padEnd(12)}\x1b[0m| `;
  for (const stream of [child.stdout, child.stderr]) {
    let buf = '';
    stream.on('data', (d) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop();
      for (const line of lines) process.stdout.write(tag + line + '\n');
    });
  }
  child.on('exit', (code, signal) => {
    process.stdout.write(`${tag}exited (${signal ?? code})\n`);
    if (!stopping) stop(code ?? 1);
  });
  return child;
});

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  const deadline = setTimeout(() => { for (const c of children) c.kill('SIGKILL'); }, 30_000);
  Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r))))).then(() => {
    clearTimeout(deadline);
    process.exit(code);
  });
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
