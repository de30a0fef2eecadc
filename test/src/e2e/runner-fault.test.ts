import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

/**
 * Runner replicas sharing the work with real NATS, Redis and Postgres: a runner killed mid-stream
 * loses nothing and the user sees one clean reply; SIGTERM lets a run finish.
 */
describe('runner replicas', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  const words = Array.from({ length: 40 }, (_, i) => `w${i + 1}`).join(' ');

  before(async () => {
    // A short ack wait so a dead runner's run comes back within seconds (production: 60 s).
    sys = await startTestSystem({ startServices: false, serviceEnv: { RUNNER_ACK_WAIT_MS: '3000', SHUTDOWN_GRACE_SECONDS: '15' } });
    await sys.services.start('dispatcher');
    await Promise.all([sys.services.start('runner', {}, 'runner-1' as never), sys.services.start('runner', {}, 'runner-2' as never)]);
    runs = await RunPublisher.open(sys);
  });

  after(async () => {
    await runs?.close();
    await sys?.stop();
  });

  test('SIGKILL of the runner holding a streaming run: the run restarts on the other one, the user gets exactly one complete reply', async () => {
    // About 2 s of streaming per attempt, so the kill lands mid-stream.
    sys.llm.setDefault({ text: words, tokensPerSecond: 20 });
    const run = await runs.publish(runs.request());
    await sys.callbacks.waitFor((all) => repliesTo(all, run).length > 0, 20_000);
    const holder = ['runner-1', 'runner-2'].find((r) => sys.services.get(r).logs.some((l) => l.includes(run.queryId) && l.includes('run started')));
    assert.ok(holder, `one runner logged the run:\n${sys.services.allLogs().slice(-3000)}`);
    await sys.services.kill(holder, 'SIGKILL');
    const survivor = holder === 'runner-1' ? 'runner-2' : 'runner-1';

    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final === true), 30_000).then((all) => repliesTo(all, run));
    // Give stragglers of the dead attempt a moment to show up if the gate were broken.
    await new Promise((r) => setTimeout(r, 1_000));
    const all = repliesTo(sys.callbacks.received, run);
    const finals = all.filter((c) => c.json.is_final === true);
    assert.equal(finals.length, 1, 'exactly one final part');
    assert.equal(replyText(finals[0]), words, 'the final part is the complete answer');
    assert.ok(all.every((c) => c.json.stream === true), 'every part is a stream part');
    assert.ok(replies.length >= 2);
    assert.ok(sys.services.get(survivor).logs.some((l) => l.includes(run.queryId) && l.includes('"attempt":2')), 'the survivor ran attempt 2');
    assert.equal(sys.llm.requests.filter((r) => JSON.stringify(r.body.messages).includes('hello')).length >= 2, true);

    // The restarted run's CONSUMER span links to the attempt that died with the other runner.
    const runsProcess = `process ${sys.topology.streams.runs.subjects[0]}`;
    const spans = await sys.otlp.waitFor((s) => s.some((x) => x.name === runsProcess && x.attributes['messaging.nats.message.delivery_count'] === 2), 20_000);
    const second = spans.find((x) => x.name === runsProcess && x.attributes['messaging.nats.message.delivery_count'] === 2)!;
    assert.equal(second.links.length, 1, 'one link to the earlier attempt');
    assert.equal(second.links[0].attributes['conveyor.link.type'], 'previous_attempt');
    // (This test publishes runs without trace context, so each attempt roots its own trace; the link is
    // what ties them together.)
    assert.match(second.links[0].spanId, /^[0-9a-f]{16}$/);
    assert.notEqual(second.links[0].spanId, second.spanId);
  });

  test('SIGTERM: the runner stops pulling, finishes its run, and exits cleanly', async () => {
    sys.llm.setDefault({ text: words, tokensPerSecond: 20 });
    const survivor = ['runner-1', 'runner-2'].find((r) => sys.services.get(r).child.exitCode === null && sys.services.get(r).child.signalCode === null)!;
    const run = await runs.publish(runs.request());
    await sys.callbacks.waitFor((all) => repliesTo(all, run).length > 0, 20_000);
    const exit = sys.services.kill(survivor, 'SIGTERM');
    await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final === true), 20_000);
    assert.equal(await exit, 0);
    const finals = repliesTo(sys.callbacks.received, run).filter((c) => c.json.is_final === true);
    assert.equal(finals.length, 1);
    assert.equal(replyText(finals[0]), words);
    // Finished within attempt 1: nothing was handed back.
    assert.ok(!sys.services.get(survivor).logs.some((l) => l.includes(run.queryId) && l.includes('"attempt":2')));
  });
});
