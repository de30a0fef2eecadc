// Run by ops-start-bare.test.ts inside a network namespace of its own (bwrap --unshare-net), where no
// NATS, Redis or Postgres listens on the default ports: the quickstart's commands as a newcomer types
// them (`npm run dev:fakes`, `npm start`, `npm run send`), twice, and a JSON report on stdout of what
// each start printed and did. Usage: node start-bare-driver.js <data folder>
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPrismaClient } from '@conveyor/persistence';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const home = process.argv[2]!;
const STEP_TIMEOUT_MS = 240_000;

const env: NodeJS.ProcessEnv = { ...process.env, CONVEYOR_HOME: home, CONVEYOR_START_SKIP_BUILD: '1', HOST: '127.0.0.1' };
// A bare machine: no backend URL given, and the sandbox left out (bubblewrap does not nest here).
for (const name of ['NATS_URL', 'REDIS_URL', 'DATABASE_URL', 'CONVEYOR_SUBJECT_PREFIX', 'LLM_BASE_URL', 'LLM_API_KEY', 'HTTP_BOT_CALLBACK_URL', 'HTTP_BOT_INBOUND_SECRET', 'CONVEYOR_CONFIG']) delete env[name];
env.SANDBOX_BWRAP_PATH = '/nonexistent/bwrap';

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function run(script: string, args: string[] = []): Running {
  const child = spawn(process.execPath, [path.join(repoRoot, 'scripts', script), ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => text.replace(/\x1b\[\d+m/g, '') };
}

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Processes still running with this data folder in their environment (what a start left behind). */
function processesOfHome(): string[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid).flatMap((d) => {
    try {
      if (!readFileSync(`/proc/${d}/environ`, 'latin1').split('\0').includes(`CONVEYOR_HOME=${home}`)) return [];
      return [readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0').join(' ').trim()];
    } catch {
      return [];
    }
  });
}

const SERVICES = ['ingress', 'orchestrator', 'runner', 'dispatcher', 'gateway', 'admin'];

async function startOnce(fakes: Running, text: string) {
  const started = run('start.mjs');
  const fail = (err: Error) => {
    started.child.kill('SIGKILL');
    throw new Error(`${err.message}\n--- npm start printed:\n${started.output().slice(-4000)}`);
  };
  await until('every service ready', () => SERVICES.every((s) => started.output().includes(`conveyor: ${s} ready`)) || (started.child.exitCode !== null && fail(new Error('npm start exited')))).catch(fail);
  const send = run('send.mjs', [text]);
  const sendExit = await send.exited;
  const reply = await until(`the reply to "${text}"`, () => fakes.output().split('\n').find((l) => l.includes('final=true') && l.includes(`Echo: ${text}`))).catch(fail);
  const credentials = JSON.parse(readFileSync(path.join(home, 'postgres.json'), 'utf8')) as { user: string; password: string };
  const prisma = createPrismaClient(`postgresql://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:5432/conveyor`);
  const queries = await prisma.queryRecord.count().finally(() => prisma.$disconnect());
  started.child.kill('SIGINT');
  const exit = await started.exited;
  return { output: started.output(), sendExit, sendOutput: send.output(), reply, queries, exit, leftBehind: processesOfHome().filter((p) => !p.includes('dev-fakes')) };
}

const fakes = run('dev-fakes.mjs');
try {
  await until('the fakes', () => fakes.output().includes('callback server'), 60_000);
  const first = await startOnce(fakes, 'hello from a bare machine');
  const second = await startOnce(fakes, 'and again');
  const logs = readdirSync(path.join(home, 'logs')).sort();
  const ingressLog = readFileSync(path.join(home, 'logs', 'ingress.log'), 'utf8');
  console.log(JSON.stringify({ first, second, logs, ingressLogJsonLines: ingressLog.split('\n').filter((l) => l.startsWith('{"level"')).length }));
} finally {
  fakes.child.kill('SIGINT');
  await fakes.exited;
}
