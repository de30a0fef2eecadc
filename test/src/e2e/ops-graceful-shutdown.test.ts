import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';

/**
 * SIGTERM on a runner in the middle of a model call (what Kubernetes does on scale-in or rollout)
 * loses no query: a run that fits in the grace period finishes and is acked; one that does not is
 * handed back to JetStream at once (nak) and completed by another replica.
 */
describe('a runner stopped mid-run loses no query', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    for (const name of ['ingress', 'orchestrator', 'dispatcher'] as const) await sys.services.start(name);
  });

  after(async () => {
    await sys?.stop();
  });

  async function postAndWaitForModel(sessionId: string): Promise<string> {
    const before = sys.llm.requests.length;
    const res = await sys.post({ session_id: sessionId, message: [{ type: 'Plain', text: `question of ${sessionId}` }] });
    assert.equal(res.status, 202);
    const { data } = (await res.json()) as { data: { accepted_message_id: string } };
    await waitUntil('the model was called', () => sys.llm.requests.length > before, 20_000);
    return data.accepted_message_id;
  }

  const replyTo = (id: string) => sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === id), 30_000)
    .then((all) => all.filter((c) => c.json?.reply_to === id));

  test('the run finishes within the grace period, then the runner exits cleanly', async () => {
    const runner = await sys.services.start('runner', { SHUTDOWN_GRACE_SECONDS: '15' }, 'runner-a');
    sys.llm.setDefault({ text: 'finished while draining', delayFirstTokenMs: 2_000 });
    const id = await postAndWaitForModel('drain-1');
    runner.child.kill('SIGTERM');
    // Not ready any more while it drains: the load balancer and KEDA stop counting on it.
    await waitUntil('readiness fails while draining', () => fetch(`${runner.url}/health/ready`).then((r) => r.status !== 200, () => true), 5_000);
    assert.equal(await runner.exited, 0, sys.services.allLogs().slice(-3000));
    const [reply] = await replyTo(id);
    assert.deepEqual(reply.json.message, [{ type: 'Plain', text: 'finished while draining' }]);
    assert.ok(runner.logs.some((l) => l.includes('runner draining')));
  });

  test('a run longer than the grace period is handed back and completed by another replica', async () => {
    const a = await sys.services.start('runner', { SHUTDOWN_GRACE_SECONDS: '4' }, 'runner-b');
    // The first call gets no answer (not even response headers) within the grace period; the retry
    // elsewhere answers at once.
    let calls = 0;
    sys.llm.setDefault(async () => {
      if (++calls > 1) return { text: 'answered by the other replica' };
      await new Promise((r) => setTimeout(r, 12_000).unref());
      return { text: 'too late' };
    });
    const id = await postAndWaitForModel('drain-2');
    const t0 = Date.now();
    a.child.kill('SIGTERM');
    assert.equal(await a.exited, 0, sys.services.allLogs().slice(-3000));
    assert.ok(Date.now() - t0 < 6_000, 'stopped within its grace period');
    await sys.services.start('runner', {}, 'runner-c');
    const replies = await replyTo(id);
    assert.deepEqual(replies.map((r) => r.json.message), [[{ type: 'Plain', text: 'answered by the other replica' }]], 'one reply, no failure hint');
    assert.equal(calls, 2);
    assert.ok(a.logs.some((l) => l.includes('aborting them')), 'the unfinished run was aborted and handed back');
  });
});
