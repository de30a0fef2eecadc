import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, closeDatabase, type Database } from '@conveyor/persistence';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { repoRoot } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { finalReply, send, text } from './pipeline-support.js';

/**
 * The example plugin in Go (examples/go-plugin), built with Debian's Go and NATS client and run as its
 * own process: its tool is offered to the local agent and keeps a count in the plugin's storage
 * through the host API; its command reads the count back. Nothing of Conveyor's TypeScript is in it,
 * so this checks the documented wire format end to end.
 */
describe('a plugin written in Go', () => {
  let sys: TestSystem;
  let db: Database;
  let plugin: ChildProcess | undefined;
  const output: string[] = [];
  const build = mkdtempSync(path.join(tmpdir(), 'conveyor-go-plugin-'));
  const name = `example/${uniqueName('visits')}`;

  before(async () => {
    // GOPATH mode over Debian's packaged sources (golang-github-nats-io-go-nats-dev): no module download.
    await promisify(execFile)('go', ['build', '-o', path.join(build, 'plugin'), '.'], {
      cwd: path.join(repoRoot, 'examples/go-plugin'),
      env: { ...process.env, GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOCACHE: path.join(build, 'cache'), GOFLAGS: '' },
      timeout: 600_000,
    });
    sys = await startTestSystem();
    db = createDatabase(sys.db.url, 1);
    plugin = spawn(path.join(build, 'plugin'), [], { env: { ...process.env, NATS_URL, CONVEYOR_SUBJECT_PREFIX: sys.prefix, PLUGIN_NAME: name }, stdio: ['ignore', 'pipe', 'pipe'] });
    plugin.stdout!.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
    plugin.stderr!.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
    await waitUntil('the Go plugin started', () => output.includes('ready'), 60_000);
    // The orchestrator learns the plugin from its heartbeats: wait until !help lists its command.
    for (let i = 0; ; i++) {
      const help = await finalReply(sys, await send(sys, text('go-wait', '!help')));
      if (String(help.json.message.at(-1).text).includes('!visits: how many visits a visitor made')) break;
      if (i > 60) assert.fail(`the orchestrator never listed the Go plugin's command; plugin output: ${output.join(' | ')}`);
    }
  });
  after(async () => {
    plugin?.kill('SIGTERM');
    if (db) await closeDatabase(db);
    await sys?.stop();
    rmSync(build, { recursive: true, force: true });
  });

  test('the model calls its tool twice; the count lives in the plugin\'s storage; its command reads it', async () => {
    for (const expected of ['alice has visited 1 time(s)', 'alice has visited 2 time(s)']) {
      sys.llm.script({ toolCalls: [{ name: 'count_visit', arguments: JSON.stringify({ visitor: 'alice' }) }] }, { text: 'noted' });
      const reply = await finalReply(sys, await send(sys, text('go-1', 'alice is here')));
      assert.equal(reply.json.message.at(-1).text, 'noted');
      const offered = ((sys.llm.requests.at(-2)!.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
      assert.ok(offered.includes('count_visit'), `offered: ${offered.join(', ')}`);
      const toolMessage = sys.llm.requests.at(-1)!.body.messages!.findLast((m) => m.role === 'tool');
      const content = Array.isArray(toolMessage?.content) ? toolMessage.content.map((p: { text?: string }) => p.text ?? '').join('') : String(toolMessage?.content);
      assert.equal(content, expected);
    }
    const row = await db.prisma.pluginStorageEntry.findUnique({ where: { plugin_key: { plugin: name, key: 'visits:alice' } } });
    assert.equal(row?.value, '2');
    const command = await finalReply(sys, await send(sys, text('go-2', '!visits alice')));
    assert.deepEqual(command.json.message.at(-1), { type: 'Plain', text: '[bot] alice: 2 visit(s)' });
  });

  test('a tool call without its required argument: the plugin\'s error reaches the model', async () => {
    sys.llm.script({ toolCalls: [{ name: 'count_visit', arguments: '{}' }] }, { text: 'sorry' });
    await finalReply(sys, await send(sys, text('go-3', 'someone came')));
    const toolMessage = sys.llm.requests.at(-1)!.body.messages!.findLast((m) => m.role === 'tool');
    assert.match(String(Array.isArray(toolMessage?.content) ? toolMessage.content.map((p: { text?: string }) => p.text).join('') : toolMessage?.content), /visitor is required/);
  });
});
