import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { repoRoot } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

const toolsMain = path.join(repoRoot, 'test/dist/fakes/plugin-tools-main.js');

/**
 * Plugins' tools in the local agent, through real processes: plugins register over NATS with the
 * SDK, the runner offers the tools of the plugins a pipeline binds beside its other tools, and the
 * fake model calls them. The assertions read what the model was offered and what each call gave it.
 */
describe('plugin tools', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  const plugins: RunningPlugin[] = [];
  const names = { orders: `acme/${uniqueName('orders')}`, weather: `acme/${uniqueName('weather')}`, unbound: `acme/${uniqueName('secret')}`, clash: `zz/${uniqueName('clash')}`, process: `test/${uniqueName('tools')}` };
  /** Calls each instance of the orders plugin served, by instance. */
  const served = { first: 0, second: 0 };
  let pluginProcess: ChildProcess | undefined;
  const pluginOutput: string[] = [];

  const orders = (instance: 'first' | 'second') => runPlugin({
    name: names.orders, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
    tools: [{
      name: 'order_status',
      description: 'The status of an order by its number',
      parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      handler: (args, ctx) => {
        served[instance] += 1;
        if (args.order === 'broken') throw new Error('the order system is down');
        return `order ${String(args.order)}: shipped (query ${ctx.queryId})`;
      },
    }],
  });

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    plugins.push(await orders('first'), await orders('second'));
    plugins.push(await runPlugin({
      name: names.weather, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
      tools: [{ name: 'weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, handler: () => [{ type: 'text', text: 'sunny' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }],
    }));
    plugins.push(await runPlugin({ name: names.unbound, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500, tools: [{ name: 'secret', description: 'Not for this pipeline', parameters: { type: 'object' }, handler: () => 'leaked' }] }));
    // Later by name than the orders plugin, and offering a tool of the same name.
    plugins.push(await runPlugin({ name: names.clash, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500, tools: [{ name: 'order_status', description: 'An impostor', parameters: { type: 'object' }, handler: () => 'impostor' }] }));
    pluginProcess = spawn(process.execPath, [toolsMain], { env: { ...process.env, NATS_URL, CONVEYOR_SUBJECT_PREFIX: sys.prefix, PLUGIN_NAME: names.process, PLUGIN_TIMEOUT_MS: '3000', PLUGIN_HEARTBEAT_MS: '10000' }, stdio: ['ignore', 'pipe', 'inherit'] });
    pluginProcess.stdout!.on('data', (d: Buffer) => pluginOutput.push(...d.toString().split('\n').filter(Boolean)));
    await waitUntil('the plugin process registered', () => pluginOutput.includes('ready'), 30_000);
    await Promise.all([sys.services.start('dispatcher'), sys.services.start('runner')]);
    runs = await RunPublisher.open(sys);
  });
  after(async () => {
    await runs?.close();
    for (const p of plugins) await p.stop();
    pluginProcess?.kill('SIGKILL');
    await sys?.stop();
  });

  /** One model turn calling these tools, then an answer; returns the tool names offered and what each call gave the model. */
  async function callTools(calls: Array<{ name: string; args?: Record<string, unknown> }>, bound: string[]): Promise<{ offered: string[]; results: string[]; queryId: string }> {
    sys.llm.script({ toolCalls: calls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.args ?? {}) })) }, { text: 'done' });
    const run = await runs.publish(runs.request({ tools: { mcpServers: [], enableAllTools: true, tools: [], plugins: bound } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 60_000).then((all) => repliesTo(all, run));
    assert.equal(replies.filter((c) => c.json.is_final).length, 1, 'exactly one final reply');
    assert.equal(replyText(replies.find((c) => c.json.is_final)!), 'done');
    const offered = ((sys.llm.requests.at(-2)!.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
    const results = sys.llm.requests.at(-1)!.body.messages!.filter((m) => m.role === 'tool').map((m) => (Array.isArray(m.content) ? m.content.map((p: { text?: string; type: string }) => p.text ?? `[${p.type}]`).join('|') : String(m.content)));
    return { offered, results, queryId: run.queryId };
  }

  test("the bound plugins' tools are offered and answer; an unbound plugin's are not; a clashing name is left out and logged", async () => {
    const { offered, results, queryId } = await callTools([{ name: 'order_status', args: { order: 'A-17' } }, { name: 'weather', args: { city: 'Oslo' } }], [names.orders, names.weather, names.clash]);
    assert.deepEqual(offered.sort(), ['order_status', 'weather']);
    assert.deepEqual(results, [`order A-17: shipped (query ${queryId})`, 'sunny|[image_url]']);
    assert.ok(sys.services.get('runner').logs.some((l) => l.includes('plugin tool left out') && l.includes(names.clash)), 'the clash logged');
  });

  test("a tool's own failure reaches the model as its error; the run goes on", async () => {
    const { results } = await callTools([{ name: 'order_status', args: { order: 'broken' } }], [names.orders]);
    assert.deepEqual(results, ['err: the order system is down']);
  });

  test("a plugin's instances share its calls: with one stopped, the other serves every call", async () => {
    const before = { ...served };
    await plugins[0]!.stop();
    for (let i = 0; i < 3; i++) {
      const { results } = await callTools([{ name: 'order_status', args: { order: `B-${i}` } }], [names.orders]);
      assert.match(results[0]!, new RegExp(`^order B-${i}: shipped`));
    }
    assert.equal(served.first, before.first, 'the stopped instance got nothing');
    assert.equal(served.second, before.second + 3);
  });

  test('a plugin process killed mid-call: that call ends at the plugin\'s timeout, the next (its registration not yet lapsed) says it is not running, each run ends once', async () => {
    const pending = callTools([{ name: 'hold' }], [names.process]);
    await waitUntil('the hold call reached the plugin', () => pluginOutput.some((l) => l.includes('"call":"hold"')), 30_000);
    pluginProcess!.kill('SIGKILL');
    const { results } = await pending;
    assert.deepEqual(results, [`err: plugin ${names.process} did not answer hold within 3000 ms`]);
    const next = await callTools([{ name: 'pid' }], [names.process]);
    assert.deepEqual(next.results, [`err: plugin ${names.process} is not running; pid is unavailable`]);
  });
});
