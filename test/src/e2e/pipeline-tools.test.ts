import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp-server.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { callbacksFor, finalReply, send, text } from './pipeline-support.js';

const replyText = (json: { message?: { text?: string }[] }) => (json.message ?? []).map((p) => p.text ?? '').join('');

/**
 * Tool calls as the user sees them and the tools a pipeline offers, through the ingress, the four
 * services and the HTTP-bot callbacks. Two MCP servers are enabled; the pipeline binds one of them
 * (LangBot's extensions_preferences).
 */
describe('tools in a pipeline', () => {
  let sys: TestSystem;
  let alpha: FakeMcpHttp;
  let beta: FakeMcpHttp;

  before(async () => {
    [alpha, beta] = await Promise.all([startFakeMcpHttp({ echoPrefix: 'alpha' }), startFakeMcpHttp({ echoPrefix: 'beta' })]);
    sys = await startTestSystem({ startServices: false, pipelineConfig: { output: { misc: { 'track-function-calls': true } } } });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.mcpServer.create({ data: { id: 'alpha-1', name: 'alpha', transport: 'http', config: { url: alpha.url } } });
      await prisma.mcpServer.create({ data: { id: 'beta-1', name: 'beta', transport: 'http', config: { url: beta.url } } });
      await prisma.pipeline.update({ where: { id: 'default' }, data: { extensionsPreferences: { enable_all_mcp_servers: false, mcp_servers: ['beta-1'] } } });
    } finally {
      await prisma.$disconnect();
    }
    await sys.services.startAll();
  });
  after(async () => {
    await sys?.stop();
    await Promise.all([alpha?.close(), beta?.close()]);
  });

  test('track-function-calls shows the text before the tool round, LangBot\'s Call a.b... with the tools\' names, then the answer', async () => {
    sys.llm.script(
      { text: 'Checking.', toolCalls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }, { name: 'search', arguments: '{}' }] },
      { text: 'Sunny in Oslo.' },
    );
    const id = await send(sys, text('tools-1', 'weather?'));
    assert.equal(replyText((await finalReply(sys, id)).json), 'Sunny in Oslo.');
    const texts = callbacksFor(sys, id).map((c) => replyText(c.json));
    assert.ok(texts.includes('Checking.'), texts.join(' | '));
    assert.ok(texts.includes('Call get_weather.search...'), texts.join(' | '));
    assert.ok(texts.indexOf('Checking.') < texts.indexOf('Call get_weather.search...'));
    assert.ok(texts.indexOf('Call get_weather.search...') < texts.indexOf('Sunny in Oslo.'));
  });

  test('only the MCP servers the pipeline binds are offered and called', async () => {
    sys.llm.script({ toolCalls: [{ name: 'echo', arguments: '{"text":"ping"}' }] }, { text: 'Echoed.' });
    const id = await send(sys, text('tools-2', 'echo ping'));
    assert.equal(replyText((await finalReply(sys, id)).json), 'Echoed.');
    const [first, second] = sys.llm.requests.slice(-2).map((r) => r.body);
    const offered = (first.tools as { function: { name: string } }[]).map((t) => t.function.name);
    assert.ok(offered.includes('echo'), offered.join(','));
    assert.ok(offered.every((name) => !name.includes('__')), `no second server's tools: ${offered.join(',')}`);
    assert.deepEqual(second.messages!.filter((m) => m.role === 'tool').map((m) => m.content), [[{ type: 'text', text: 'beta: ping' }]]);
    assert.deepEqual(alpha.calls, []);
    assert.deepEqual(beta.calls, ['echo']);
  });
});
