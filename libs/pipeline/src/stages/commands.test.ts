import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PluginCommand } from '@conveyor/contracts';
import type { PluginPort } from '../engine/ports.js';
import { recordingDeps, testQuery } from '../testing.js';
import { commandFailed, executeCommand, notPermitted, unknownCommand } from './commands.js';

/** A plugin port offering these commands; runs are recorded and answered by `run`. */
function pluginCommands(commands: PluginCommand[], run: (command: string, params: string[], isAdmin: boolean) => Promise<string>) {
  const calls: Array<{ command: string; params: string[]; text: string; isAdmin: boolean }> = [];
  const port: PluginPort = {
    emit: async () => ({ preventDefault: false, answered: [] }),
    listens: () => false,
    commands: () => commands,
    runCommand: async (_q, command, call) => {
      calls.push({ command, params: call.params, text: call.text_message, isAdmin: call.is_admin });
      return run(command, call.params, call.is_admin);
    },
  };
  return { port, calls };
}

const commands: PluginCommand[] = [
  { name: 'order', help: '查询订单', adminOnly: false },
  { name: 'purge', help: '清空缓存', adminOnly: true },
  { name: 'reset', help: 'a plugin cannot take a built-in name', adminOnly: false },
];

test('a plugin command runs with its parameters; built-ins keep their names; help lists both', async () => {
  const { port, calls } = pluginCommands(commands, async (command, params) => `${command}: ${params.join(',')}`);
  const { deps } = recordingDeps({ plugins: port, commands: { resetConversation: async () => true }, commandPrefixes: ['!'] });
  const q = testQuery({ launcherId: 'u1' });
  assert.deepEqual(await executeCommand(q, 'order A-17 now', deps), ['order: A-17,now']);
  assert.deepEqual(calls, [{ command: 'order', params: ['A-17', 'now'], text: 'order A-17 now', isAdmin: false }]);
  assert.deepEqual(await executeCommand(q, 'reset', deps), ['会话已重置'], 'the built-in, not the plugin');
  const [help] = await executeCommand(q, 'help', deps);
  assert.match(help!, /!order: 查询订单/);
  assert.match(help!, /!purge: 清空缓存/);
  assert.doesNotMatch(help!, /cannot take a built-in name/);
  assert.deepEqual(await executeCommand(q, 'nothing', deps), [unknownCommand('nothing')]);
});

test('an admin-only command: refused for other chats, run for a chat the settings name (in a group, the group)', async () => {
  const { port, calls } = pluginCommands(commands, async (_c, _p, isAdmin) => `purged (admin: ${isAdmin})`);
  const admins = new Set(['person:boss', 'group:ops']);
  const { deps } = recordingDeps({ plugins: port, commandAdmins: admins });
  assert.deepEqual(await executeCommand(testQuery({ launcherId: 'someone' }), 'purge', deps), [notPermitted('purge')]);
  assert.equal(calls.length, 0, 'the plugin was not called');
  assert.deepEqual(await executeCommand(testQuery({ launcherId: 'boss' }), 'purge', deps), ['purged (admin: true)']);
  assert.deepEqual(await executeCommand(testQuery({ group: true, launcherId: 'ops', senderId: 'anyone' }), 'purge', deps), ['purged (admin: true)']);
});

test('a plugin that fails or is gone: the chat is told, the query goes on', async () => {
  const { port } = pluginCommands(commands, async () => {
    throw new Error('plugin acme/orders is not running; order is unavailable');
  });
  const { deps } = recordingDeps({ plugins: port });
  assert.deepEqual(await executeCommand(testQuery(), 'order 1', deps), [commandFailed('order', 'plugin acme/orders is not running; order is unavailable')]);
});
