import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, ConfigEvents, startAdmin } from '../admin/admin-support.js';
import { finalReply, send, text } from './pipeline-support.js';

/**
 * Plugins' `!`-commands through the whole system: a message with the command prefix reaches the
 * orchestrator's command stage, which runs the command of a plugin the pipeline binds over NATS, with
 * LangBot's privilege rule (admin-only commands for the chats the instance settings name).
 */
describe('plugin commands', () => {
  let sys: TestSystem;
  let plugin: RunningPlugin | undefined;
  let api: AdminClient;
  let events: ConfigEvents;
  const name = `acme/${uniqueName('ops')}`;
  const seen: Array<{ command: string; params: string[]; launcher: string; isAdmin: boolean }> = [];

  before(async () => {
    sys = await startTestSystem();
    const admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    events = await ConfigEvents.open(sys);
    plugin = await runPlugin({
      name, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
      commands: [
        { name: 'order', help: 'look up an order', handler: (params, ctx) => (seen.push({ command: 'order', params, launcher: `${ctx.launcherType}:${ctx.launcherId}`, isAdmin: ctx.isAdmin }), `order ${params[0]}: shipped`) },
        { name: 'purge', help: 'empty the cache', adminOnly: true, handler: () => 'purged' },
      ],
    });
    // The orchestrator learns the plugin from its heartbeats: wait until !help lists its command.
    for (let i = 0; ; i++) {
      const help = await finalReply(sys, await send(sys, text('ops-wait', '!help')));
      if (String(help.json.message.at(-1).text).includes('!order: look up an order')) break;
      if (i > 60) assert.fail('the orchestrator never listed the plugin command');
    }
  });
  after(async () => {
    await plugin?.stop();
    await events?.close();
    await sys?.stop();
  });

  test('a plugin command answers the chat, with its parameters; no model is called', async () => {
    const calls = sys.llm.requests.length;
    const reply = await finalReply(sys, await send(sys, text('ops-1', '!order A-17 today')));
    assert.deepEqual(reply.json.message.at(-1), { type: 'Plain', text: '[bot] order A-17: shipped' });
    assert.deepEqual(seen.at(-1), { command: 'order', params: ['A-17', 'today'], launcher: 'person:ops-1', isAdmin: false });
    assert.equal(sys.llm.requests.length, calls);
  });

  test('an admin-only command: refused until the instance settings name the chat an admin', async () => {
    const refused = await finalReply(sys, await send(sys, text('ops-2', '!purge')));
    assert.deepEqual(refused.json.message.at(-1), { type: 'Plain', text: '[bot] 权限不足: purge' });
    const current = await api.call('GET', '/settings');
    const put = await api.call('PUT', '/settings', { version: current.body.version, command: { ...current.body.command, admins: ['person:ops-2'] } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    await events.waitFor('settings', 'instance', put.body.version);
    const allowed = await finalReply(sys, await send(sys, text('ops-2', '!purge')));
    assert.deepEqual(allowed.json.message.at(-1), { type: 'Plain', text: '[bot] purged' });
    const other = await finalReply(sys, await send(sys, text('ops-3', '!purge')));
    assert.deepEqual(other.json.message.at(-1), { type: 'Plain', text: '[bot] 权限不足: purge' });
  });

  test('a stopped plugin: the chat is told the command failed, the next message is served as usual', async () => {
    await plugin!.stop();
    const failed = await finalReply(sys, await send(sys, text('ops-4', '!order B-1')));
    assert.match(String(failed.json.message.at(-1).text), new RegExp(`^\\[bot\\] (命令执行失败: order: plugin ${name} is not running; order is unavailable|未知命令: order)$`));
    sys.llm.setDefault({ text: 'a model answer' });
    const chat = await finalReply(sys, await send(sys, text('ops-4', 'hello')));
    assert.deepEqual(chat.json.message.at(-1), { type: 'Plain', text: 'a model answer' });
  });
});
