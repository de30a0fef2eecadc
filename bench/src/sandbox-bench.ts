// `npm run bench:sandbox [calls] [workspaces]`: the agent's sandbox as a runner asks it, one sandbox
// replica against the machine's NATS, Redis and Postgres.
//   1. `exec true` round trip (request → bubblewrap → reply) on a warm workspace, one call at a time:
//      p50 and p99 of `calls` calls, beside `read` of a small file (no process started).
//   2. `workspaces` distinct workspaces, each given a file by one `exec` (eight calls at once, the
//      replica's default SANDBOX_CONCURRENCY): how many one replica holds, what each costs in the
//      replica's memory (RSS after a full GC, before and after) and on its disk (its local copy),
//      and in Postgres (the stored archive).
//   3. An MCP `tools/call` to a stdio server, one at a time: started by the sandbox role and relayed
//      over NATS, beside the same server started by this process (as `MCP_STDIO_IN=runner` does).
// Run it alone on the machine: it measures time.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { Pool } from 'pg';
import { McpSession, type StdioServerSpec } from '@conveyor/agent';
import { SandboxClient, SandboxMcpTransport } from '@conveyor/sandbox';
import { BARE_MCP_SERVER_SOURCE, startTestSystem, NATS_URL, uniqueName } from '@conveyor/test';
import { MEMORY_LINE } from './memory-probe.js';
import { fmtMs, percentile } from './stats.js';

const calls = Number(process.argv[2] ?? 500);
const workspaceCount = Number(process.argv[3] ?? 500);
const probe = new URL('./memory-probe.js', import.meta.url).href;
const sandboxDir = mkdtempSync(path.join(tmpdir(), 'conveyor-sandbox-bench-'));
// The commands run as the sandbox's own uid, which must reach the workspaces under it.
chmodSync(sandboxDir, 0o755);

const sys = await startTestSystem({
  startServices: false,
  serviceEnv: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: '' },
  serviceNodeArgs: ['--expose-gc', '--import', probe],
});
const nc = await connect({ servers: NATS_URL });
const pool = new Pool({ connectionString: sys.db.url, max: 2 });
try {
  const sandbox = await sys.services.start('sandbox', { SANDBOX_DIR: sandboxDir, SANDBOX_LOCAL_WORKSPACES: String(workspaceCount + 16) });
  const client = new SandboxClient({ nc, topology: sys.topology });
  const run = uniqueName('bench');

  const ask = async (workspace: string, call: Parameters<SandboxClient['call']>[0]['call']) => {
    const reply = await client.call({ v: 1, workspace, call });
    if (!reply.ok) throw new Error(`${call.op} on ${workspace}: ${reply.code}: ${reply.error}`);
    return reply;
  };

  // ---- 1. round trip on a warm workspace
  const warm = `${run}-warm`;
  await ask(warm, { op: 'exec', command: 'echo ready > ready.txt' });
  for (let i = 0; i < 20; i++) await ask(warm, { op: 'exec', command: 'true' });
  const execMs: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await ask(warm, { op: 'exec', command: 'true' });
    execMs.push(performance.now() - t);
  }
  const readMs: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await ask(warm, { op: 'read', path: 'ready.txt' });
    readMs.push(performance.now() - t);
  }

  // ---- 2. many workspaces on one replica
  const memory = async (): Promise<number> => {
    const before = sandbox.logs.length;
    process.kill(sandbox.child.pid!, 'SIGUSR2');
    for (let i = 0; i < 200; i++) {
      const line = sandbox.logs.slice(before).find((l) => l.includes(MEMORY_LINE) && l.includes('"after-gc"'));
      if (line) return (JSON.parse(line.slice(line.indexOf(MEMORY_LINE) + MEMORY_LINE.length)) as { rss: number }).rss;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the sandbox printed no memory line');
  };
  const diskBytes = () => Number(execFileSync('du', ['-sb', sandboxDir], { encoding: 'utf8' }).split('\t')[0]);
  const rssBefore = await memory();
  const diskBefore = diskBytes();
  const names = Array.from({ length: workspaceCount }, (_, i) => `${run}-ws-${i}`);
  const started = performance.now();
  let next = 0;
  const failures: string[] = [];
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < names.length) {
      const ws = names[next++]!;
      try {
        await ask(ws, { op: 'exec', command: 'printf "%s\\n" "notes of this workspace" > notes.txt' });
      } catch (err) {
        failures.push(String(err));
      }
    }
  }));
  const fillSeconds = (performance.now() - started) / 1000;
  const rssAfter = await memory();
  const diskAfter = diskBytes();
  const { rows } = await pool.query<{ n: number; bytes: string }>(`SELECT count(*)::int AS n, coalesce(sum(octet_length("archive")), 0)::text AS bytes FROM "SandboxWorkspace" WHERE "id" LIKE $1`, [`${run}-ws-%`]);
  // Every workspace still answers from this replica after all were made.
  const firstBack = await ask(names[0]!, { op: 'read', path: 'notes.txt' });

  // ---- 3. MCP tool calls through the relay, and in this process
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const server = { id: 'bench', name: 'bench', transport: 'stdio' as const, config: { command: process.execPath, args: ['-e', BARE_MCP_SERVER_SOURCE], network: false } };
  const mcpCall = async (session: McpSession): Promise<number[]> => {
    await session.listTools();
    for (let i = 0; i < 20; i++) await session.callTool('whereami', {});
    const ms: number[] = [];
    for (let i = 0; i < calls; i++) {
      const t = performance.now();
      await session.callTool('whereami', {});
      ms.push(performance.now() - t);
    }
    await session.close();
    return ms;
  };
  const sessionOptions = { logger: quiet, connectTimeoutMs: 30_000, callTimeoutMs: 30_000, toolsTtlMs: 60_000 };
  const relayedStart = performance.now();
  const relayed = new McpSession({ ...server, config: { ...server.config, command: 'node' } }, {
    ...sessionOptions,
    stdioTransport: (s, spec: StdioServerSpec) => new SandboxMcpTransport({ nc, topology: sys.topology, server: { server: s.name, ...spec } }),
  });
  await relayed.listTools();
  const relayedStartMs = performance.now() - relayedStart;
  const relayedMs = await mcpCall(relayed);
  const local = new McpSession(server, { ...sessionOptions, stdioCommands: [process.execPath] });
  const localStart = performance.now();
  await local.listTools();
  const localStartMs = performance.now() - localStart;
  const localMs = await mcpCall(local);

  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`sandbox bench: one replica, ${calls} calls each, ${workspaceCount} workspaces`);
  console.log(`  exec true   p50 ${fmtMs(percentile(execMs, 50))}  p99 ${fmtMs(percentile(execMs, 99))}  max ${fmtMs(percentile(execMs, 100))}`);
  console.log(`  read        p50 ${fmtMs(percentile(readMs, 50))}  p99 ${fmtMs(percentile(readMs, 99))}`);
  console.log(`  workspaces  ${workspaceCount - failures.length}/${workspaceCount} made in ${fillSeconds.toFixed(1)} s (${((workspaceCount - failures.length) / fillSeconds).toFixed(1)}/s, 8 at once); stored ${rows[0]?.n ?? 0}, read back: ${firstBack.ok}`);
  console.log(`  per idle workspace: replica RSS ${kib((rssAfter - rssBefore) / workspaceCount)} (RSS ${(rssBefore / 2 ** 20).toFixed(1)} → ${(rssAfter / 2 ** 20).toFixed(1)} MiB), local copy ${kib((diskAfter - diskBefore) / workspaceCount)} on disk, Postgres archive ${kib(Number(rows[0]?.bytes ?? 0) / Math.max(1, rows[0]?.n ?? 1))}`);
  console.log(`  MCP tools/call via the sandbox  p50 ${fmtMs(percentile(relayedMs, 50))}  p99 ${fmtMs(percentile(relayedMs, 99))}  (start and handshake ${fmtMs(relayedStartMs)})`);
  console.log(`  MCP tools/call in this process p50 ${fmtMs(percentile(localMs, 50))}  p99 ${fmtMs(percentile(localMs, 99))}  (start and handshake ${fmtMs(localStartMs)})`);
  if (failures.length) console.log(`  failures: ${failures.slice(0, 5).join('; ')}`);
  await pool.query(`DELETE FROM "SandboxWorkspace" WHERE "id" LIKE $1`, [`${run}-%`]);
} finally {
  await pool.end();
  await nc.close();
  await sys.stop();
  rmSync(sandboxDir, { recursive: true, force: true });
}
