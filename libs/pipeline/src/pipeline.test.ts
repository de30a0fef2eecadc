import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { QueryEnvelope, RunRequest } from '@conveyor/contracts';
import { DEFAULT_PIPELINE_STAGES } from './defaults.js';
import { newQuery } from './engine/new-query.js';
import { botPipelineOf } from './pipeline-directory.js';
import { boundMcpServers, boundPlugins, loadPipeline } from './pipeline.js';
import { STAGE_REGISTRY } from './stages/registry.js';
import { recordingDeps } from './testing.js';

const envelope: QueryEnvelope = {
  v: 1, queryId: '00000000-0000-4000-8000-000000000000', receivedAt: new Date().toISOString(), senderName: 'Alice',
  route: { botId: 'bot-1', adapter: 'http-bot', sessionId: 's1', launcherType: 'person', launcherId: 's1', senderId: 's1', replyTo: 'in_1' },
  messageChain: [{ type: 'Plain', text: 'hello' }],
};

/** The run request MessageProcessor hands to the runner for a bot whose pipeline row has these extensions_preferences. */
async function runRequestFor(extensionsPreferences: unknown): Promise<RunRequest> {
  const bot = botPipelineOf({ id: 'bot-1', enabled: true, pipelineId: 'p1', pipeline: { stages: DEFAULT_PIPELINE_STAGES, config: {}, extensionsPreferences } });
  assert.ok(bot.ok);
  const q = newQuery(envelope, bot.pipeline);
  const runs: RunRequest[] = [];
  const { deps } = recordingDeps({ handoff: { startRun: async (_q, run) => void runs.push(run) } });
  for await (const _ of STAGE_REGISTRY.MessageProcessor({ name: 'MessageProcessor', config: q.config, deps }).process(q) as AsyncIterable<unknown>);
  assert.equal(runs.length, 1);
  return runs[0];
}

test('the run request binds the MCP servers the pipeline binds (LangBot: extensions_preferences)', async () => {
  assert.deepEqual((await runRequestFor({ enable_all_mcp_servers: false, mcp_servers: ['fs', 'web'] })).tools?.mcpServers, ['fs', 'web']);
  assert.deepEqual((await runRequestFor({ enable_all_mcp_servers: false, mcp_servers: [] })).tools?.mcpServers, [], 'none bound: no MCP tools');
  assert.equal((await runRequestFor({ enable_all_mcp_servers: true, mcp_servers: ['fs'] })).tools?.mcpServers, 'all');
  assert.equal((await runRequestFor({})).tools?.mcpServers, 'all', 'LangBot\'s default: every server');
  assert.equal((await runRequestFor(undefined)).tools?.mcpServers, 'all');
});

test('boundMcpServers reads LangBot\'s keys leniently, as RuntimePipeline does', () => {
  assert.equal(boundMcpServers(null), 'all');
  assert.equal(boundMcpServers([]), 'all');
  assert.deepEqual(boundMcpServers({ enable_all_mcp_servers: false }), []);
  assert.deepEqual(boundMcpServers({ enable_all_mcp_servers: false, mcp_servers: ['a', 3, 'b'] }), ['a', 'b']);
});

test('boundPlugins reads enable_all_plugins (default true) and plugins, independent of the MCP keys', () => {
  assert.equal(boundPlugins(undefined), 'all');
  assert.equal(boundPlugins({ enable_all_mcp_servers: false, mcp_servers: [] }), 'all');
  assert.deepEqual(boundPlugins({ enable_all_plugins: false }), []);
  assert.deepEqual(boundPlugins({ enable_all_plugins: false, plugins: ['me/a', null, 'me/b'] }), ['me/a', 'me/b']);
  const loaded = loadPipeline('p', ['MessageProcessor'], {}, { enable_all_plugins: false, plugins: ['me/a'] });
  assert.ok(loaded.ok);
  assert.deepEqual([loaded.pipeline.plugins, loaded.pipeline.mcpServers], [['me/a'], 'all']);
});

test('botPipelineOf: a pipeline that does not validate is kept with its issues and a reason', () => {
  const bot = botPipelineOf({ id: 'bot-1', enabled: false, pipelineId: 'p1', pipeline: { stages: ['NoSuchStage'], config: {} } });
  assert.equal(bot.ok, false);
  assert.ok(!bot.ok && bot.issues.length > 0 && bot.reason.length > 0);
  assert.deepEqual([bot.botId, bot.enabled, bot.pipelineId], ['bot-1', false, 'p1']);
});
