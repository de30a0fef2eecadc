// The admin API as an MCP server, driven by the MCP SDK's own client over Streamable HTTP: an admin
// token's tools manage a model end to end, a viewer token gets the read tools only and a write tool
// it names is refused, invalid arguments come back as the route's validation error, and every call
// is in the audit log under the token that made it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AdminApi } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, startAdmin } from './admin-support.js';

describe('admin API: the MCP server', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  const clients: Client[] = [];
  const tokens = { admin: { id: '', secret: '' }, viewer: { id: '', secret: '' } };

  const connect = async (secret: string): Promise<Client> => {
    const client = new Client({ name: 'conveyor-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${admin.url}/api/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
    clients.push(client);
    return client;
  };
  const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;
  const json = (r: unknown) => JSON.parse(text(r));
  const audit = async (query: string) => (await api.call('GET', `/audit?${query}`)).body.items as AdminApi.AuditEntry[];

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    for (const role of ['admin', 'viewer'] as const) {
      const made = await api.call('POST', '/tokens', { name: uniqueName(`mcp-${role}-`), role });
      assert.equal(made.status, 201);
      tokens[role] = { id: made.body.token.id, secret: made.body.secret };
    }
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await sys?.stop();
  });

  test('an admin token manages a model through the tools, and each call and write is audited under the token', async () => {
    const client = await connect(tokens.admin.secret);
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const name of ['list_bots', 'create_bot', 'update_pipeline', 'delete_model', 'test_model', 'create_knowledge_base', 'list_queries', 'get_query_timeline', 'get_monitoring_summary']) assert.ok(names.includes(name), `${name} offered`);
    const id = uniqueName('mcp-model-');
    const canary = `sk-mcp-canary-${uniqueName('key-')}`;
    const created = await client.callTool({ name: 'create_model', arguments: { body: { id, baseUrl: sys.llm.url, model: 'fake-model', abilities: ['func_call'], apiKey: canary } } });
    assert.ok(!created.isError, text(created));
    assert.ok(!text(created).includes(canary), 'the key is not in the tool result');
    assert.equal(json(created).version, 1);
    const listed = json(await client.callTool({ name: 'list_models', arguments: { limit: 200 } })) as { items: { id: string }[] };
    assert.ok(listed.items.some((m) => m.id === id));
    const updated = await client.callTool({ name: 'update_model', arguments: { id, body: { name: 'Renamed', version: 1 } } });
    assert.equal(json(updated).name, 'Renamed');
    const stale = await client.callTool({ name: 'update_model', arguments: { id, body: { name: 'Again', version: 1 } } });
    assert.equal(stale.isError, true, 'a write naming an old version is refused');
    assert.equal(json(stale).code, 'version_conflict');
    const read = await client.callTool({ name: 'get_model', arguments: { id } });
    assert.equal(json(read).name, 'Renamed');
    assert.ok(!text(read).includes(canary), 'the key is not in a read');
    const removed = await client.callTool({ name: 'delete_model', arguments: { id, body: { version: 2 } } });
    assert.ok(!removed.isError, text(removed));
    assert.equal((await api.call('GET', `/models/${id}`)).status, 404);

    const writes = await audit(`resource=model&resourceId=${id}`);
    assert.deepEqual(writes.map((e) => [e.action, e.actor]).reverse(), [['create', `token:${tokens.admin.id}`], ['update', `token:${tokens.admin.id}`], ['delete', `token:${tokens.admin.id}`]]);
    const calls = await audit(`resource=mcp-tool&actor=${encodeURIComponent(`token:${tokens.admin.id}`)}&limit=100`);
    assert.deepEqual(calls.map((e) => e.resourceId).reverse(), ['create_model', 'list_models', 'update_model', 'update_model', 'get_model', 'delete_model']);
    assert.ok(calls.every((e) => e.action === 'call'));
    assert.ok(!admin.logs.some((l) => l.includes(canary)), 'the key is in no log line');
  });

  test('a viewer token gets the read tools only; a write tool it names is refused and audited', async () => {
    const client = await connect(tokens.viewer.secret);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('list_bots') && names.includes('get_monitoring_summary') && names.includes('list_queries'));
    assert.deepEqual(names.filter((n) => /^(create|update|delete|test)_/.test(n)), [], 'no write tool offered');
    const refused = await client.callTool({ name: 'create_bot', arguments: { body: { id: 'x' } } });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /needs the admin role/);
    const summary = await client.callTool({ name: 'get_monitoring_summary', arguments: { range: '1h' } });
    assert.ok(!summary.isError, text(summary));
    assert.ok('totals' in json(summary));
    const queries = await client.callTool({ name: 'list_queries', arguments: { limit: 5 } });
    assert.ok(Array.isArray(json(queries).items));
    const entries = await audit(`resource=mcp-tool&actor=${encodeURIComponent(`token:${tokens.viewer.id}`)}&limit=100`);
    assert.deepEqual(entries.map((e) => [e.resourceId, e.action]).reverse(), [['create_bot', 'refused'], ['get_monitoring_summary', 'call'], ['list_queries', 'call']]);
  });

  test('arguments the route refuses come back as its validation error; no credential gets 401', async () => {
    const client = await connect(tokens.admin.secret);
    const bad = await client.callTool({ name: 'create_model', arguments: { body: { id: uniqueName('m-'), baseUrl: 'ftp://x', model: 'x' } } });
    assert.equal(bad.isError, true);
    assert.equal(json(bad).code, 'validation_failed');
    const missing = await client.callTool({ name: 'get_bot', arguments: {} });
    assert.equal(missing.isError, true);
    assert.match(text(missing), /id: a string/);
    const anonymous = await fetch(`${admin.url}/api/v1/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    assert.equal(anonymous.status, 401);
  });

  test("a request the MCP transport refuses gets its JSON-RPC error, as an AdminError naming the refused input", async () => {
    const post = (headers: Record<string, string>, body: string) => fetch(`${admin.url}/api/v1/mcp`, { method: 'POST', headers: { authorization: `Bearer ${tokens.viewer.secret}`, ...headers }, body });
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const both = 'application/json, text/event-stream';
    const cases: [string, Response, number, string][] = [
      ['no event-stream in Accept', await post({ 'content-type': 'application/json', accept: 'application/json' }, list), 406, 'header.accept'],
      ['a body that is not JSON', await post({ 'content-type': 'text/plain', accept: both }, list), 415, 'header.content-type'],
      ['a body that is not JSON-RPC', await post({ 'content-type': 'application/json', accept: both }, JSON.stringify({ hello: 'there' })), 400, 'body'],
      ['an unknown protocol version', await post({ 'content-type': 'application/json', accept: both, 'mcp-protocol-version': '1999-01-01' }, list), 400, 'header.mcp-protocol-version'],
    ];
    for (const [what, res, status, field] of cases) {
      assert.equal(res.status, status, what);
      const raw = await res.text();
      assert.ok(!raw.includes(tokens.viewer.secret), `${what}: the caller's token is not in the answer`);
      const body = JSON.parse(raw) as AdminApi.AdminError & { jsonrpc?: string; error?: { code: number; message: string } };
      assert.equal(body.field, field, what);
      assert.equal(body.code, 'validation_failed', what);
      assert.equal(body.statusCode, status, what);
      assert.equal(body.jsonrpc, '2.0', what);
      assert.equal(body.message, body.error?.message, what);
    }
    // A good request still gets its JSON-RPC answer.
    const ok = await post({ 'content-type': 'application/json', accept: both }, list);
    assert.equal(ok.status, 200);
    assert.ok(((await ok.json()) as { result: { tools: unknown[] } }).result.tools.length > 0);
  });
});
