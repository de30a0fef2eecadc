import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

/**
 * The answer is out before the turn is written to history. When that write fails for good (here: the
 * run names a conversation that does not exist), running the model again would only send the answer
 * again: the run ends once, and the query says why.
 */
describe('a run whose history cannot be written', () => {
  let sys: TestSystem;
  let runs: RunPublisher;

  before(async () => {
    sys = await startTestSystem({ startServices: false, serviceEnv: { RUNNER_ACK_WAIT_MS: '3000' } });
    await Promise.all([sys.services.start('dispatcher'), sys.services.start('runner')]);
    runs = await RunPublisher.open(sys);
  });

  after(async () => {
    await runs?.close();
    await sys?.stop();
  });

  test('answers once, with one final part', async () => {
    sys.llm.setDefault({ text: 'the answer' });
    const run = await runs.publish(runs.request({ messages: [{ role: 'user', content: 'nul \u0000 inside' }] }));
    await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final === true), 30_000);
    // A second final would come from a redelivered run (ack wait 3 s, then backoff): give it the time.
    const deadline = Date.now() + 12_000;
    while (Date.now() < deadline && repliesTo(sys.callbacks.received, run).filter((c) => c.json.is_final === true).length < 2) {
      await new Promise((r) => setTimeout(r, 250));
    }
    const finals = repliesTo(sys.callbacks.received, run).filter((c) => c.json.is_final === true);
    assert.equal(finals.length, 1, 'exactly one final part');
    assert.equal(replyText(finals[0]), 'the answer');
    assert.ok(sys.services.allLogs().includes('turn not written to history'), 'the failure is logged');
  });
});
