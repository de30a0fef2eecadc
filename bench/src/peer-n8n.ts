// bench/peer-n8n: the nearest peer measured as `bench:e2e` measures Conveyor. n8n runs the workflow
// bench/peer/n8n-workflow.json (Webhook answered at once → an OpenAI-compatible call to the same fake
// model → a POST of the answer to the same fake integrator), on this machine's Postgres, and gets the
// same load: 64 senders POSTing for throughput (CPU read from /proc around it), then one message at a
// time for p50/p99 (POST → the callback's arrival).
//
// Usage: npm run bench:peer -- [messages=3000] [concurrency=64] [sequential=200] --n8n-dir=DIR
//   DIR holds an installed n8n: mkdir DIR && cd DIR && npm install --ignore-scripts n8n@2.39.10
//   (2.39.10: the newest whose dependencies the npm registry all has; n8n needs Node 24).
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { request } from 'undici';
import { startCallbackReceiver, startFakeOpenAI } from '@conveyor/test';
import { processTreeCpuMs, SideMeter } from './proc-cpu.js';
import { percentile, WARMUP_MESSAGES } from './stats.js';
import { commandLine } from './command-line.js';

const { flags, positional } = commandLine();
const total = Number(positional[0] ?? 3000);
const concurrency = Number(positional[1] ?? 64);
const sequential = Number(positional[2] ?? 200);
const n8nDir = path.resolve(flags.get('n8n-dir') ?? process.env.N8N_DIR ?? '');
const n8nBin = path.join(n8nDir, 'node_modules', 'n8n', 'bin', 'n8n');
if (!existsSync(n8nBin)) {
  console.error(`no n8n at ${n8nDir}: mkdir DIR && cd DIR && npm install --ignore-scripts n8n@2.39.10, then --n8n-dir=DIR`);
  process.exit(1);
}
const workflow = fileURLToPath(new URL('../peer/n8n-workflow.json', import.meta.url));
const WORKFLOW_ID = (JSON.parse(readFileSync(workflow, 'utf8')) as { id: string }).id;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const databaseUrl = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
const database = `n8n_peer_${randomUUID().slice(0, 8)}`;
const admin = new pg.Client({ connectionString: databaseUrl.toString() });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);

const llm = await startFakeOpenAI({ record: false });
llm.setDefault((body) => ({ text: `Echo: ${String(body.messages?.at(-1)?.content ?? '')}` }));
const callbacks = await startCallbackReceiver({ secret: 'unused' });
const port = await freePort();
const home = mkdtempSync(path.join(tmpdir(), 'n8n-peer-'));
const env: NodeJS.ProcessEnv = {
  ...process.env,
  N8N_USER_FOLDER: home,
  N8N_PORT: String(port),
  N8N_LISTEN_ADDRESS: '127.0.0.1',
  DB_TYPE: 'postgresdb',
  DB_POSTGRESDB_HOST: databaseUrl.hostname,
  DB_POSTGRESDB_PORT: databaseUrl.port || '5432',
  DB_POSTGRESDB_USER: decodeURIComponent(databaseUrl.username || 'postgres'),
  DB_POSTGRESDB_PASSWORD: decodeURIComponent(databaseUrl.password),
  DB_POSTGRESDB_DATABASE: database,
  N8N_DIAGNOSTICS_ENABLED: 'false',
  N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
  N8N_BLOCK_ENV_ACCESS_IN_NODE: 'false',
  N8N_LOG_LEVEL: 'warn',
  // As Conveyor keeps a query log row per message and not its payloads: n8n keeps no successful execution.
  EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none',
  EXECUTIONS_DATA_SAVE_ON_PROGRESS: 'false',
  EXECUTIONS_DATA_SAVE_MANUAL_EXECUTIONS: 'false',
  PEER_LLM_URL: llm.url,
  PEER_CALLBACK_URL: callbacks.url,
};
const cli = (...args: string[]) => execFileSync(process.execPath, [n8nBin, ...args], { cwd: n8nDir, env, stdio: 'ignore' });
cli('import:workflow', `--input=${workflow}`);
cli('publish:workflow', `--id=${WORKFLOW_ID}`);
const n8n = spawn(process.execPath, [n8nBin, 'start'], { cwd: n8nDir, env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
let n8nErr = '';
n8n.stderr!.on('data', (d: Buffer) => (n8nErr = (n8nErr + d.toString()).slice(-4000)));

const webhook = `http://127.0.0.1:${port}/webhook/conveyor-peer`;
const sentAt = new Map<string, number>();
async function send(): Promise<void> {
  const id = randomUUID();
  sentAt.set(id, performance.now());
  const res = await request(webhook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ session_id: `s${sentAt.size % 64}`, message_id: id, message: [{ type: 'Plain', text: `hello ${id}` }] }) });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`n8n answered ${res.statusCode}`);
}
const arrived = () => callbacks.received.length;
async function pushAll(count: number): Promise<void> {
  let left = count;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (left-- > 0) await send(); }));
}
/** Every process of this n8n (its main process and any runner it starts), by their command lines. */
function n8nPids(): number[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      return readFileSync(`/proc/${d}/cmdline`, 'latin1').includes(n8nDir) ? [Number(d)] : [];
    } catch {
      return [];
    }
  });
}
const n8nCpu = () => n8nPids().reduce((sum, pid) => sum + processTreeCpuMs(pid), 0);

try {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const ok = await send().then(() => true, () => false);
    if (ok) break;
    if (Date.now() > deadline || n8n.exitCode !== null) throw new Error(`n8n did not serve the webhook: ${n8nErr}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const warmup = Math.min(WARMUP_MESSAGES, total);
  await pushAll(warmup);
  await callbacks.waitFor(() => arrived() >= warmup + 1, 300_000);

  const side = new SideMeter(new Map());
  const base = arrived();
  const before = n8nCpu();
  side.start();
  const t0 = performance.now();
  await pushAll(total);
  await callbacks.waitFor(() => arrived() >= base + total, 600_000);
  const elapsedS = (performance.now() - t0) / 1000;
  const n8nMs = n8nCpu() - before;
  const beside = side.stop().cpuMs;

  const latencies: number[] = [];
  for (let i = 0; i < sequential; i++) {
    const at = arrived();
    await send();
    await callbacks.waitFor(() => arrived() > at, 60_000);
    const c = callbacks.received[at]!;
    latencies.push(c.receivedAt - (sentAt.get(c.json?.reply_to) ?? NaN));
  }
  const perMsg = (ms: number) => (ms / total).toFixed(2);
  const version = (JSON.parse(readFileSync(path.join(n8nDir, 'node_modules', 'n8n', 'package.json'), 'utf8')) as { version: string }).version;
  console.log(`n8n ${version}: Webhook (answered at once) → HTTP Request to the fake model → HTTP Request to the fake integrator; Postgres; executions of successes not saved`);
  console.log('| messages | throughput (msg/s, senders) | p50 one at a time (ms) | p99 (ms) | CPU ms/msg n8n | postgres | bench | all processes |');
  console.log('|---|---|---|---|---|---|---|---|');
  const all = n8nMs + (beside.get('postgres') ?? 0) + (beside.get('bench') ?? 0);
  console.log(`| ${total} | ${(total / elapsedS).toFixed(0)} (${concurrency}) | ${percentile(latencies, 50).toFixed(2)} | ${percentile(latencies, 99).toFixed(2)} | ${perMsg(n8nMs)} | ${perMsg(beside.get('postgres') ?? 0)} | ${perMsg(beside.get('bench') ?? 0)} | ${perMsg(all)} |`);
} finally {
  if (n8n.pid) try { process.kill(-n8n.pid, 'SIGTERM'); } catch { /* gone */ }
  await new Promise((r) => (n8n.exitCode !== null ? r(undefined) : n8n.once('exit', r)));
  await Promise.all([llm.close(), callbacks.close()]);
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  rmSync(home, { recursive: true, force: true });
}
