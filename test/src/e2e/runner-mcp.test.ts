import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ContentResult, McpPool, McpToolError, type McpServerConfig } from '@conveyor/agent';
import { createPrismaClient } from '@conveyor/persistence';
import { startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp-server.js';
import { repoRoot } from '../harness/services.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

const stdioMain = path.join(repoRoot, 'test/dist/fakes/mcp-stdio-main.js');
const logs: string[] = [];
const logger = { info: (_: object, m: string) => void logs.push(m), warn: (_: object, m: string) => void logs.push(m), error: (_: object, m: string) => void logs.push(m) };
const stdio = (id: string, name: string, prefix = 'echo'): McpServerConfig => ({ id, name, transport: 'stdio', config: { command: process.execPath, args: [stdioMain, prefix] } });

describe('MCP tools through the SDK', () => {
  let http: FakeMcpHttp;
  let sseOnly: FakeMcpHttp;
  const pools: McpPool[] = [];
  const pool = (callTimeoutMs = 300_000) => {
    const p = new McpPool({ logger, connectTimeoutMs: 10_000, callTimeoutMs, toolsTtlMs: 60_000, stdioCommands: [process.execPath] });
    pools.push(p);
    return p;
  };

  before(async () => {
    [http, sseOnly] = await Promise.all([startFakeMcpHttp({ echoPrefix: 'http' }), startFakeMcpHttp({ mode: 'sse-only', echoPrefix: 'sse' })]);
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all([http.close(), sseOnly.close()]);
  });

  test('stdio: tools are listed and called; an isError result throws; images pass through as content', async () => {
    const p = pool();
    p.sync([stdio('s1', 'local')]);
    const box = await p.toolBox('all');
    assert.deepEqual(box.definitions().map((d) => d.function.name).sort(), ['add', 'echo', 'fail', 'pixel', 'slow']);
    assert.equal(box.definitions().find((d) => d.function.name === 'add')!.function.parameters!.type, 'object');
    assert.deepEqual(await box.call('add', { a: 2, b: 3 }), new ContentResult([{ type: 'text', text: '5' }]));
    await assert.rejects(box.call('fail', {}), (e: Error) => e instanceof McpToolError && /on purpose/.test(e.message));
    assert.deepEqual(await box.call('pixel', {}), new ContentResult([{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }]));
  });

  test('Streamable HTTP, and the SSE fallback when a server refuses it', async () => {
    const p = pool();
    p.sync([
      { id: 'h1', name: 'remote', transport: 'http', config: { url: http.url } },
      { id: 'h2', name: 'legacy', transport: 'http', config: { url: sseOnly.url } },
    ]);
    const box = await p.toolBox(['h1']);
    assert.deepEqual(await box.call('echo', { text: 'hi' }), new ContentResult([{ type: 'text', text: 'http: hi' }]));
    assert.deepEqual(http.calls, ['echo']);
    const legacy = await p.toolBox(['h2']);
    assert.deepEqual(await legacy.call('echo', { text: 'old' }), new ContentResult([{ type: 'text', text: 'sse: old' }]));
    assert.ok(logs.some((l) => l.includes('falling back to SSE')));
  });

  test('name collisions: the first server by name keeps the raw name, the other gets server__tool, on every replica alike', async () => {
    const p = pool();
    // Listed in the opposite order on purpose: the result must not depend on it.
    p.sync([{ id: 'z', name: 'beta', transport: 'http', config: { url: http.url } }, stdio('a', 'alpha', 'stdio')]);
    const box = await p.toolBox('all');
    const names = box.definitions().map((d) => d.function.name);
    assert.ok(names.includes('echo') && names.includes('beta__echo'), names.join(','));
    assert.deepEqual(await box.call('echo', { text: 'x' }), new ContentResult([{ type: 'text', text: 'stdio: x' }]));
    assert.deepEqual(await box.call('beta__echo', { text: 'x' }), new ContentResult([{ type: 'text', text: 'http: x' }]));
  });

  test('an unreachable server is left out and backed off; a slow tool hits the call timeout', async () => {
    const p = pool(300);
    p.sync([{ id: 'dead', name: 'dead', transport: 'http', config: { url: 'http://127.0.0.1:9/mcp' } }, stdio('s', 'local')]);
    const box = await p.toolBox('all');
    assert.ok(box.definitions().length === 5, 'the live server still serves its tools');
    const started = Date.now();
    await p.toolBox(['dead']);
    assert.ok(Date.now() - started < 500, 'within the backoff window no new connect is tried');
    assert.ok(logs.some((l) => l.includes('MCP connect failed')));
    await assert.rejects(box.call('slow', { ms: 3_000 }), /timed out|timeout/i);
  });
});

describe('MCP tools in the runner process', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  let http: FakeMcpHttp;

  before(async () => {
    http = await startFakeMcpHttp({ echoPrefix: 'http' });
    sys = await startTestSystem({ startServices: false });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.mcpServer.create({ data: { id: 'stdio-1', name: 'local', transport: 'stdio', config: { command: process.execPath, args: [stdioMain, 'stdio'] } } });
      await prisma.mcpServer.create({ data: { id: 'http-1', name: 'remote', transport: 'http', config: { url: http.url } } });
    } finally {
      await prisma.$disconnect();
    }
    await Promise.all([sys.services.start('dispatcher'), sys.services.start('runner', { MCP_STDIO_IN: 'runner', MCP_STDIO_COMMANDS: process.execPath })]);
    runs = await RunPublisher.open(sys);
  });
  after(async () => {
    await runs?.close();
    await sys?.stop();
    await http?.close();
  });

  test('a run bound to both servers calls a stdio tool and an HTTP tool, and answers with their results', async () => {
    sys.llm.script(
      { toolCalls: [{ name: 'add', arguments: '{"a": 20, "b": 22}' }, { name: 'remote__echo', arguments: '{"text":"ping"}' }] },
      { text: 'The sum is 42.' },
    );
    const run = await runs.publish(runs.request({ tools: { mcpServers: ['stdio-1', 'http-1'], enableAllTools: true, tools: [] } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 30_000).then((all) => repliesTo(all, run));
    assert.equal(replyText(replies.find((c) => c.json.is_final)!), 'The sum is 42.');
    const offered = (sys.llm.requests.at(-2)!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    assert.ok(offered.includes('add') && offered.includes('remote__echo'), offered.join(','));
    const toolMessages = sys.llm.requests.at(-1)!.body.messages!.filter((m) => m.role === 'tool').map((m) => m.content);
    assert.deepEqual(toolMessages, [[{ type: 'text', text: '42' }], [{ type: 'text', text: 'http: ping' }]]);
    assert.deepEqual(http.calls, ['echo']);
  });

  test('enable-all-tools off offers only the listed tools', async () => {
    sys.llm.script({ text: 'ok' });
    const run = await runs.publish(runs.request({ tools: { mcpServers: 'all', enableAllTools: false, tools: ['add'] } }));
    await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 30_000);
    assert.deepEqual((sys.llm.requests.at(-1)!.body.tools as { function: { name: string } }[]).map((t) => t.function.name), ['add']);
  });
});
