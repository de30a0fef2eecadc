import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPrismaClient } from '@conveyor/persistence';
import { BARE_MCP_SERVER_SOURCE } from '../fakes/mcp-stdio-bare.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

/** A uid of this file's own, so its processes count against no other test's. */
const RUN_AS = String(64_000 + Math.floor(Math.random() * 1_000));

interface WhereAmI {
  hostname: string;
  uid: number;
  cwd: string;
  env: string[];
  started: string;
}

/**
 * Stdio MCP servers run by the sandbox role, through real processes: the runner (MCP_STDIO_IN left at
 * its default) asks a sandbox replica over NATS to start the server under bubblewrap and speaks MCP
 * with it through the relay. The fake model calls the server's tools; the assertions read what they
 * answered, and what is left running on the sandbox's disk.
 */
describe('stdio MCP servers in the sandbox', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  let listener: Server;
  let listenerPort = 0;
  const dirs = { a: mkdtempSync(path.join(tmpdir(), 'conveyor-mcp-a-')), b: mkdtempSync(path.join(tmpdir(), 'conveyor-mcp-b-')) };
  const sandboxEnv = (dir: string) => ({ SANDBOX_DIR: dir, SANDBOX_RUN_AS_UID: RUN_AS, SANDBOX_RUN_AS_GID: RUN_AS });
  /** Scratch folders of MCP processes running on a replica. */
  const running = (dir: string) => {
    try {
      return readdirSync(path.join(dir, 'mcp'));
    } catch {
      return [];
    }
  };

  before(async () => {
    listener = createServer((socket) => {
      // The fake's dial closes at once; a reset is expected.
      socket.on('error', () => undefined);
      socket.end('hello\n');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    listenerPort = (listener.address() as { port: number }).port;
    sys = await startTestSystem({ startServices: false });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.mcpServer.create({ data: { id: 'boxed', name: 'boxed', transport: 'stdio', config: { command: 'node', args: ['-e', BARE_MCP_SERVER_SOURCE], env: { GREETING: 'hi' }, network: false } } });
      // `network` left out: on, as `npx -y` servers need it to install themselves.
      await prisma.mcpServer.create({ data: { id: 'networked', name: 'networked', transport: 'stdio', config: { command: 'node', args: ['-e', BARE_MCP_SERVER_SOURCE] } } });
    } finally {
      await prisma.$disconnect();
    }
    await Promise.all([
      sys.services.start('dispatcher'),
      sys.services.start('runner', { MCP_SANDBOX_KEEPALIVE_MS: '500', CONVEYOR_SECRET_CANARY: 'runner-only' }),
      sys.services.start('sandbox', sandboxEnv(dirs.a), 'sandbox-a'),
    ]);
    runs = await RunPublisher.open(sys);
  });
  after(async () => {
    await runs?.close();
    await sys?.stop();
    listener?.close();
    for (const dir of Object.values(dirs)) rmSync(dir, { recursive: true, force: true });
  });

  /** One model turn calling one tool of the boxed server, then an answer; returns what the tool gave the model. */
  async function callTool(name: string, args: Record<string, unknown> = {}, server = 'boxed'): Promise<string> {
    sys.llm.script({ toolCalls: [{ name, arguments: JSON.stringify(args) }] }, { text: 'done' });
    const run = await runs.publish(runs.request({ tools: { mcpServers: [server], enableAllTools: true, tools: [] } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 120_000).then((all) => repliesTo(all, run));
    assert.equal(replies.filter((c) => c.json.is_final).length, 1, 'exactly one final reply');
    assert.equal(replyText(replies.find((c) => c.json.is_final)!), 'done');
    const tool = sys.llm.requests.at(-1)!.body.messages!.filter((m) => m.role === 'tool').at(-1)!.content;
    return Array.isArray(tool) ? tool.map((p: { text?: string }) => p.text ?? '').join('') : String(tool);
  }

  test('the server runs under bubblewrap: its own host name and user, a scratch workspace, only its declared environment, no network', async () => {
    const where = JSON.parse(await callTool('whereami')) as WhereAmI;
    assert.equal(where.hostname, 'sandbox');
    assert.equal(where.uid, 1000);
    assert.equal(where.cwd, '/workspace');
    assert.ok(where.env.includes('GREETING'), where.env.join(','));
    for (const secret of ['DATABASE_URL', 'NATS_URL', 'REDIS_URL', 'CONVEYOR_SECRET_KEY', 'CONVEYOR_SECRET_CANARY']) assert.ok(!where.env.includes(secret), `${secret} reached the MCP server`);
    assert.equal(await callTool('dial', { host: '127.0.0.1', port: listenerPort }), 'error ECONNREFUSED', 'the host is out of reach without network');
    assert.deepEqual(running(dirs.a).length, 1, 'one MCP process on the replica');
    const again = JSON.parse(await callTool('whereami')) as WhereAmI;
    assert.equal(again.started, where.started, 'the next run reuses the running server');
  });

  test('a server whose config leaves the network on reaches it', async () => {
    assert.equal(await callTool('dial', { host: '127.0.0.1', port: listenerPort }, 'networked'), 'connected');
    await waitUntil('two MCP processes on the replica', () => running(dirs.a).length === 2, 30_000);
  });

  test('a sandbox replica killed mid-life: the next call starts the server again on the replica left', async () => {
    const before = JSON.parse(await callTool('whereami')) as WhereAmI;
    await sys.services.start('sandbox', sandboxEnv(dirs.b), 'sandbox-b');
    await sys.services.kill('sandbox-a', 'SIGKILL');
    const after = JSON.parse(await callTool('whereami')) as WhereAmI;
    assert.notEqual(after.started, before.started, 'a new process answered');
    assert.equal(after.hostname, 'sandbox');
    await waitUntil('one MCP process on the replica left', () => running(dirs.b).length === 1, 30_000);
  });

  test('a runner killed while it holds a server: the sandbox stops the server after the missed keepalives', async () => {
    await callTool('whereami');
    assert.equal(running(dirs.b).length, 1);
    await sys.services.kill('runner', 'SIGKILL');
    await waitUntil('the orphaned MCP process stopped and its folder removed', () => running(dirs.b).length === 0, 60_000);
    assert.ok(sys.services.get('sandbox-b').logs.some((l) => l.includes('MCP server in the sandbox ended') && l.includes('"reason":"idle"')), 'the stop logged with its reason');
  });
});
