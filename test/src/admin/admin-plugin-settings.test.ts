import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { createDatabase, closeDatabase, type Database } from '@conveyor/persistence';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { RunPublisher, repliesTo } from '../e2e/runner-support.js';
import { AdminClient, signedInViewer, startAdmin } from './admin-support.js';

const SCHEMA = {
  type: 'object',
  properties: {
    greeting: { type: 'string', title: 'Greeting' },
    maxItems: { type: 'integer', minimum: 1, maximum: 10 },
    apiKey: { type: 'string', writeOnly: true },
  },
  required: ['greeting'],
};

/**
 * A plugin's settings through the admin API and back to the running plugin: the schema it announces,
 * values per installation and per pipeline (secrets masked), checked against the schema, audited, and
 * taken by the plugin without a restart (its next tool call reads the new values).
 */
describe('admin API: plugin settings', () => {
  let sys: TestSystem;
  let api: AdminClient;
  let viewer: AdminClient;
  let db: Database;
  let plugin: RunningPlugin;
  let runs: RunPublisher;
  const name = `acme/${uniqueName('greeter')}`;
  const path = `/plugins/${encodeURIComponent(name)}/settings`;
  const changes: Array<string | null> = [];

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    await Promise.all([sys.services.start('runner'), sys.services.start('dispatcher')]);
    const admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    viewer = await signedInViewer(api, admin.url, uniqueName('reader'));
    db = createDatabase(sys.db.url, 1);
    plugin = await runPlugin({
      name, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500, settings: SCHEMA,
      onSettingsChanged: (pipelineId) => void changes.push(pipelineId),
      tools: [{ name: 'greet', description: 'Greets', parameters: { type: 'object' }, handler: async (_args, ctx) => JSON.stringify(await ctx.settings()) }],
    });
    await waitUntil('the admin hears the plugin', async () => AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.find((p) => p.name === name && p.hasSettings), 30_000);
    runs = await RunPublisher.open(sys);
  });
  after(async () => {
    await runs?.close();
    await plugin?.stop();
    if (db) await closeDatabase(db);
    await sys?.stop();
  });

  /** What the plugin's tool sees as its settings in a run of the default pipeline. */
  async function settingsInRun(): Promise<Record<string, unknown>> {
    sys.llm.script({ toolCalls: [{ name: 'greet', arguments: '{}' }] }, { text: 'done' });
    const run = await runs.publish(runs.request({ tools: { mcpServers: [], enableAllTools: true, tools: [], plugins: [name] } }));
    await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 60_000);
    const tool = sys.llm.requests.at(-1)!.body.messages!.findLast((m) => m.role === 'tool');
    return JSON.parse(String(Array.isArray(tool?.content) ? tool.content.map((p: { text?: string }) => p.text).join('') : tool?.content)) as Record<string, unknown>;
  }

  test('the schema and empty values first; a PUT reaches the running plugin at once, secrets masked on the way back', async () => {
    const empty = AdminApi.PluginSettings.parse((await viewer.call('GET', path)).body);
    assert.deepEqual([empty.schema, empty.scopes, empty.pipelines], [SCHEMA, [], ['default']]);
    assert.deepEqual(await settingsInRun(), {});

    const put = await api.call('PUT', path, { pipelineId: null, values: { greeting: 'Hello', maxItems: 3, apiKey: 'sk-live-0123456789abcdef' }, version: 0 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const saved = AdminApi.PluginSettings.parse(put.body);
    assert.deepEqual(saved.scopes.map((s) => [s.pipelineId, s.values, s.version]), [[null, { greeting: 'Hello', maxItems: 3, apiKey: `${AdminApi.SECRET_MASK_PREFIX}cdef` }, 1]]);
    await waitUntil('the plugin told of the change', () => changes.includes(null), 10_000);
    assert.deepEqual(await settingsInRun(), { greeting: 'Hello', maxItems: 3, apiKey: 'sk-live-0123456789abcdef' }, 'the plugin reads the new values, secret included, without a restart');

    // The masked secret sent back keeps the stored one; another field changes.
    const again = await api.call('PUT', path, { pipelineId: null, values: { ...saved.scopes[0]!.values, greeting: 'Hi' }, version: 1 });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    await waitUntil('the second change heard', () => changes.filter((c) => c === null).length >= 2, 10_000);
    assert.deepEqual(await settingsInRun(), { greeting: 'Hi', maxItems: 3, apiKey: 'sk-live-0123456789abcdef' });
    const stored = await db.prisma.pluginSetting.findUniqueOrThrow({ where: { plugin_scope: { plugin: name, scope: '' } } });
    assert.deepEqual([stored.values, stored.version], [{ greeting: 'Hi', maxItems: 3, apiKey: 'sk-live-0123456789abcdef' }, 2]);
    const audit = (await api.call('GET', `/audit?resource=plugin&resourceId=${encodeURIComponent(name)}`)).body.items as AdminApi.AuditEntry[];
    assert.deepEqual(audit.map((e) => [e.action, e.changes]), [['update-settings', ['greeting']], ['update-settings', ['apiKey', 'greeting', 'maxItems']]]);
    assert.ok(!JSON.stringify(audit).includes('sk-live'), 'no value in the audit log');
  });

  test('a pipeline\'s values go over the installation\'s for its runs', async () => {
    const put = await api.call('PUT', path, { pipelineId: 'default', values: { maxItems: 7 }, version: 0 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    await waitUntil('the plugin told of the pipeline change', () => changes.includes('default'), 10_000);
    assert.deepEqual(await settingsInRun(), { greeting: 'Hi', maxItems: 7, apiKey: 'sk-live-0123456789abcdef' });
    assert.deepEqual(await plugin.settings(), { greeting: 'Hi', maxItems: 3, apiKey: 'sk-live-0123456789abcdef' }, 'the installation\'s alone without a pipeline');
  });

  test('the plugin list counts the last hour\'s calls to the plugin from every service, with their failures and mean time', async () => {
    // Every run above called the plugin's tool once, through the runner; its counts reach Redis within seconds.
    const listed = await waitUntil('the calls counted', async () => {
      const item = AdminApi.PluginList.parse((await viewer.call('GET', '/plugins')).body).items.find((p) => p.name === name);
      return item && item.lastHour.calls >= 4 ? item : undefined;
    }, 30_000);
    assert.equal(listed.lastHour.errors, 0);
    assert.ok(listed.lastHour.meanMs !== null && listed.lastHour.meanMs >= 0);
    assert.deepEqual([listed.tools, listed.commands], [['greet'], []]);
  });

  test('bad values, a stale version, an unbound or unknown pipeline, a viewer and an unknown plugin are refused; nothing changes', async () => {
    const current = AdminApi.PluginSettings.parse((await api.call('GET', path)).body).scopes.find((s) => s.pipelineId === null)!;
    for (const [body, status, field, message] of [
      [{ pipelineId: null, values: { greeting: 'x', maxItems: 'many' }, version: current.version }, 400, 'body.values', /maxItems must be integer/],
      [{ pipelineId: null, values: { maxItems: 2 }, version: current.version }, 400, 'body.values', /must have required property 'greeting'/],
      [{ pipelineId: null, values: { greeting: 'x' }, version: current.version - 1 }, 409, 'body.version', /changed meanwhile/],
      [{ pipelineId: uniqueName('nope'), values: {}, version: 0 }, 400, 'body.pipelineId', /does not exist or does not bind/],
      [{ pipelineId: null, values: { greeting: 'x', apiKey: `${AdminApi.SECRET_MASK_PREFIX}` }, version: current.version }, 200, undefined, undefined],
    ] as const) {
      const res = await api.call('PUT', path, body);
      assert.equal(res.status, status, JSON.stringify([body, res.body]));
      if (field) assert.equal(res.body.field, field, JSON.stringify(res.body));
      if (message) assert.match(res.body.message, message);
    }
    assert.equal((await viewer.call('PUT', path, { pipelineId: null, values: { greeting: 'no' }, version: 0 })).status, 403);
    assert.equal((await api.call('GET', `/plugins/${encodeURIComponent(`acme/${uniqueName('gone')}`)}/settings`)).status, 404);
    assert.equal((await api.call('GET', '/plugins/not-a-name/settings')).status, 400);
    const stored = await db.prisma.pluginSetting.findUniqueOrThrow({ where: { plugin_scope: { plugin: name, scope: '' } } });
    assert.deepEqual(stored.values, { greeting: 'x', apiKey: 'sk-live-0123456789abcdef' }, 'only the valid write landed, its masked secret kept');
  });
});
