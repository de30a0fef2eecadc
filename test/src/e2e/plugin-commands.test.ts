import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, ConfigEvents, startAdmin } from '../admin/admin-support.js';
import { finalReply, send, text } from './pipeline-support.js';
import { waitUntil } from '../harness/wait.js';

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

  test('a plugin listening to PersonCommandSent sees every command first and may block it, answering or not', async () => {
    const sent: Array<{ command: string; params: string[]; isAdmin: boolean }> = [];
    const guard = await runPlugin({
      name: `acme/${uniqueName('guard')}`, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
      handlers: {
        PersonCommandSent: (ctx) => {
          sent.push({ command: ctx.event.command, params: ctx.event.params, isAdmin: ctx.event.is_admin });
          if (ctx.event.command === 'order' && ctx.event.params[0] === 'forbidden') {
            ctx.reply([{ type: 'Plain', text: 'orders like that are not for this chat' }]);
            ctx.preventDefault();
          }
          if (ctx.event.command === 'purge') ctx.preventDefault();
        },
      },
    });
    try {
      // The orchestrator learns the guard from its heartbeats: until then a command is not blocked.
      const blocked = await waitUntil('the guard blocks a command', async () => {
        const reply = await finalReply(sys, await send(sys, text('ops-5', '!order forbidden')));
        return reply.json.message.at(-1).text === 'orders like that are not for this chat' ? reply : undefined;
      }, 30_000);
      assert.deepEqual(blocked.json.message.at(-1), { type: 'Plain', text: 'orders like that are not for this chat' });
      const before = seen.length;
      const passed = await finalReply(sys, await send(sys, text('ops-5', '!order C-3')));
      assert.deepEqual(passed.json.message.at(-1), { type: 'Plain', text: '[bot] order C-3: shipped' });
      assert.equal(seen.length, before + 1, 'the command plugin ran it');
      assert.deepEqual(sent.at(-1), { command: 'order', params: ['C-3'], isAdmin: false });
      // Blocked without an answer: the command plugin is not called and no reply goes out.
      const calls = seen.length;
      const silent = await send(sys, text('ops-5', '!purge'));
      await waitUntil('the guard saw the purge', () => sent.some((e) => e.command === 'purge') || undefined, 30_000);
      const after = await finalReply(sys, await send(sys, text('ops-5', '!order D-4')));
      assert.deepEqual(after.json.message.at(-1), { type: 'Plain', text: '[bot] order D-4: shipped' }, 'the session goes on after the blocked command');
      assert.equal(seen.length, calls + 1, 'only the later command reached the command plugin');
      assert.equal((await sys.callbacks.waitFor(() => true)).filter((c) => c.json?.reply_to === silent).length, 0, 'nothing answered the blocked command');
    } finally {
      await guard.stop();
    }
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
