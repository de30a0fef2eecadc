import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChaosRig, failoverLine, faultViolations, type TrialOptions } from '../chaos/rig.js';

/**
 * The `redis-sentinel` chaos fault's short form (`npm run chaos -- redis-sentinel` runs many trials):
 * the whole system, two replicas of every role, on a Redis master with one replica and three Sentinels
 * of the test's own, every service given the Sentinels. While replies stream the master is SIGKILLed;
 * the Sentinels promote the replica and the services follow it with no manual step. Nothing accepted
 * may be lost or answered twice, a message sent right after the kill must be answered, and what the
 * failover loses (writes the replica had not received) stays within a Redis data loss's contract.
 * The replica keeps its own lag here; `npm run chaos -- redis-sentinel --unreplicated-ms=400` cuts it
 * off for the master's last writes, so that every trial's failover surely rolls Redis back.
 */
describe('chaos: the Redis master of a Sentinel set lost while replies stream', () => {
  let rig: ChaosRig;
  const trial: TrialOptions = { sessions: 6, messagesPerSession: 2, outageMs: 0, deadlineMs: 150_000 };

  before(async () => {
    rig = await ChaosRig.start({}, { redisSentinel: true });
  });

  after(async () => {
    await rig?.stop();
  });

  test('the replica is promoted, replies resume, and nothing accepted is lost or duplicated', async (t) => {
    const r = await rig.trial('redis-sentinel', trial);
    t.diagnostic(failoverLine(r));
    assert.ok(r.accepted >= trial.sessions, `messages were accepted (${r.accepted})`);
    assert.notEqual(r.failover?.promotedPort, r.failover?.killedPort, 'another node is the master');
    assert.deepEqual(faultViolations('redis-sentinel', r), [], `redis-sentinel trial: ${JSON.stringify({ ...r, diagnostics: undefined })}\n${r.diagnostics}\n${rig.sys.services.allLogs().split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-30).join('\n')}`);
  });
});
