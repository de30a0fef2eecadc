import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sign } from '@conveyor/http-bot';
import { startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp-server.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, startAdmin } from './admin-support.js';

const replyText = (json: { message?: { text?: string }[] }) => (json.message ?? []).map((p) => p.text ?? '').join('');

/**
 * A pipeline created through the admin API binds no MCP server until it opts in: adding a server
 * does not hand its tools to every bot's model. LangBot's key still binds every server.
 */
describe('MCP binding of pipelines created through the admin API', () => {
  let sys: TestSystem;
  let api: AdminClient;
  let mcp: FakeMcpHttp;
  const pipelineId = uniqueName('optin-');
  const serverId = uniqueName('mcp-');
  const secret = uniqueName('inbound-');
  let botId: string;

  before(async () => {
    mcp = await startFakeMcpHttp({ echoPrefix: 'bound' });
    sys = await startTestSystem();
    const admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    assert.equal((await api.call('POST', '/mcp-servers', { id: serverId, transport: 'http', config: { url: mcp.url } })).status, 201);
  });

  after(async () => {
    await sys?.stop();
    await mcp?.close();
  });

  /** Sends a message to the bot and returns the tool names the model was offered for it. */
  async function offeredTools(text: string): Promise<string[]> {
    const before = sys.llm.requests.length;
    sys.llm.script({ text: 'answered' });
    const session = uniqueName('s');
    const raw = JSON.stringify({ session_id: session, message: [{ type: 'Plain', text }] });
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await fetch(`${sys.services.get('ingress').url}/bots/${botId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(secret, ts, raw) }, body: raw });
    assert.equal(res.status, 202);
    const all = await sys.callbacks.waitFor((received) => received.some((c) => c.json?.session_id === session && c.json.is_final), 60_000);
    assert.equal(replyText(all.find((c) => c.json?.session_id === session && c.json.is_final)!.json), 'answered');
    const request = sys.llm.requests.slice(before).find((r) => JSON.stringify(r.body.messages).includes(text));
    assert.ok(request, 'the model was called for the message');
    return ((request.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
  }

  test('created without a binding: no server is bound and none offered; listing the server opts in; LangBot\'s key binds all', async () => {
    const created = await api.call('POST', '/pipelines', { id: pipelineId, config: { ai: { 'local-agent': { model: { primary: 'fake', fallbacks: [] } } } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.extensionsPreferences, { enable_all_mcp_servers: false, mcp_servers: [], enable_all_plugins: true, plugins: [], enable_all_skills: true, skills: [] });
    const bot = await api.call('POST', '/bots', { name: 'opt-in bot', adapter: 'http-bot', pipelineId, adapterConfig: { inbound_secret: secret, callback_url: `${sys.callbacks.url}/callback` } });
    assert.equal(bot.status, 201, JSON.stringify(bot.body));
    botId = bot.body.id;

    assert.deepEqual(await offeredTools('first'), [], 'an unbound pipeline offers no MCP tool');

    // Preferences sent without the key keep the stored false; the listed server is bound.
    let version = created.body.version;
    const listed = await api.call('PATCH', `/pipelines/${pipelineId}`, { version, extensionsPreferences: { mcp_servers: [serverId] } });
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(listed.body.extensionsPreferences.enable_all_mcp_servers, false);
    assert.ok((await offeredTools('second')).includes('echo'), 'the listed server\'s tools are offered');

    version = listed.body.version;
    const all = await api.call('PATCH', `/pipelines/${pipelineId}`, { version, extensionsPreferences: { enable_all_mcp_servers: true } });
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.equal(all.body.extensionsPreferences.enable_all_mcp_servers, true);
    assert.ok((await offeredTools('third')).includes('echo'), 'enable_all_mcp_servers: true binds every enabled server');
  });
});
