import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPrismaClient } from '@conveyor/persistence';
import { repoRoot } from '../harness/services.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

const envMain = path.join(repoRoot, 'test/dist/fakes/mcp-stdio-env-main.js');

/**
 * Whoever may write MCP servers and models must not get the runner's own secrets or run arbitrary
 * commands on it: a stdio server starts only with a command MCP_STDIO_COMMANDS allows, with only
 * PATH, HOME and its declared `env`; an `env:` key reference reaches only CONVEYOR_KEY_* and the
 * listed names, so a model pointed at an address of the author's choosing receives nothing else.
 */
describe('runner isolation from MCP servers and key references', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  const canary = `canary${randomBytes(12).toString('hex')}`;
  const marker = path.join(tmpdir(), uniqueName('mcp-marker-'));

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.mcpServer.create({ data: { id: 'env-1', name: 'envreport', transport: 'stdio', config: { command: process.execPath, args: [envMain], env: { DECLARED_FOR_SERVER: 'declared-value' } } } });
      // Not an allowed command: were it started, it would leave the marker file.
      await prisma.mcpServer.create({ data: { id: 'shell-1', name: 'shell', transport: 'stdio', config: { command: '/bin/sh', args: ['-c', `echo started > ${marker}`] } } });
      await prisma.llmModel.create({ data: { id: 'leaky', name: 'leaky', baseUrl: sys.llm.url, apiKeyRef: 'env:RUNNER_CANARY_SECRET', modelId: 'fake-model', abilities: ['func_call'] } });
    } finally {
      await prisma.$disconnect();
    }
    await Promise.all([
      sys.services.start('dispatcher'),
      sys.services.start('runner', {
        MCP_STDIO_IN: 'runner',
        MCP_STDIO_COMMANDS: process.execPath,
        // Stand-ins for the runner's own secrets (its DATABASE_URL and NATS/Redis URLs are real).
        RUNNER_CANARY_SECRET: canary,
        CONVEYOR_SECRET_KEY: randomBytes(32).toString('base64'),
      }),
    ]);
    runs = await RunPublisher.open(sys);
  });

  after(async () => {
    await runs?.close();
    await sys?.stop();
    await rm(marker, { force: true });
  });

  test('a stdio server gets PATH, HOME and its declared env only; a command not allowed is never started', async () => {
    sys.llm.script({ toolCalls: [{ name: 'environment', arguments: '{}' }] }, { text: 'seen' });
    const run = await runs.publish(runs.request({ tools: { mcpServers: ['env-1', 'shell-1'], enableAllTools: true, tools: [] } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 60_000).then((all) => repliesTo(all, run));
    assert.equal(replyText(replies.find((c) => c.json.is_final)!), 'seen');
    const toolMessage = sys.llm.requests.at(-1)!.body.messages!.find((m) => m.role === 'tool');
    const text = (toolMessage!.content as { text: string }[])[0].text;
    const childEnv = JSON.parse(text) as Record<string, string>;
    assert.equal(childEnv.DECLARED_FOR_SERVER, 'declared-value');
    assert.equal(childEnv.PATH, process.env.PATH);
    for (const name of ['DATABASE_URL', 'NATS_URL', 'REDIS_URL', 'CONVEYOR_SECRET_KEY', 'RUNNER_CANARY_SECRET', 'CONVEYOR_KEY_E2E_LLM', 'MCP_STDIO_COMMANDS']) {
      assert.equal(childEnv[name], undefined, `${name} reached the MCP server`);
    }
    assert.ok(!text.includes(canary));
    // The MCP SDK adds its own fixed, harmless set; nothing else of the runner's environment passes.
    const expected = ['PATH', 'HOME', 'DECLARED_FOR_SERVER', 'LOGNAME', 'SHELL', 'TERM', 'USER'];
    assert.deepEqual(Object.keys(childEnv).filter((k) => !expected.includes(k)), []);
    const logs = sys.services.get('runner').logs;
    await waitUntil('the refused command logged', () => logs.some((l) => l.includes('shell') && l.includes('not in MCP_STDIO_COMMANDS')));
    assert.equal(existsSync(marker), false, 'the shell command was never run');
  });

  test('a model whose key reference names a variable outside CONVEYOR_KEY_* and the list gets no key: the run fails, nothing is sent', async () => {
    const before = sys.llm.requests.length;
    const run = await runs.publish(runs.request({ model: { primary: 'leaky', fallbacks: [] } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final), 60_000).then((all) => repliesTo(all, run));
    assert.equal(replyText(replies.find((c) => c.json.is_final)!), 'Request failed.');
    const sent = sys.llm.requests.slice(before);
    assert.ok(sent.every((r) => !JSON.stringify(r.headers).includes(canary)), 'the canary never reached the model endpoint');
    const logs = sys.services.get('runner').logs;
    await waitUntil('the refused reference logged', () => logs.some((l) => l.includes('RUNNER_CANARY_SECRET') && l.includes('may not be used as a key')));
    assert.ok(!logs.some((l) => l.includes(canary)), 'the canary is in no log line');
  });
});
