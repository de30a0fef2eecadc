import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { finalReply, send, text } from './pipeline-support.js';

/** LangBot's `command.prefix` and `command.enable`, as the orchestrator's COMMAND_PREFIX and COMMAND_ENABLE. */
describe('command settings', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { COMMAND_PREFIX: '/' } });
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
  });
  after(async () => {
    await sys?.stop();
  });

  test('the configured prefix marks a command (and the help names it); LangBot\'s default prefix is then plain text for the model', async () => {
    const help = await finalReply(sys, await send(sys, text('cmd-1', '/help')));
    const helpText = String(help.json.message.at(-1).text);
    assert.match(helpText, /^\[bot\] 可用命令:/);
    assert.match(helpText, /\/reset: /);
    const requestsBefore = sys.llm.requests.length;

    const plain = await finalReply(sys, await send(sys, text('cmd-1', '!help')));
    assert.deepEqual(plain.json.message.at(-1), { type: 'Plain', text: 'echo: !help' });
    assert.equal(sys.llm.requests.length, requestsBefore + 1, 'the model answered the unprefixed text');
  });

  test('with commands switched off, a prefixed message goes to the model', async () => {
    const orchestrator = sys.services.get('orchestrator');
    await sys.services.kill('orchestrator', 'SIGTERM');
    await sys.services.start('orchestrator', { COMMAND_PREFIX: '/', COMMAND_ENABLE: 'false' }, orchestrator.instance);
    const reply = await finalReply(sys, await send(sys, text('cmd-2', '/help')));
    assert.deepEqual(reply.json.message.at(-1), { type: 'Plain', text: 'echo: /help' });
  });
});
