import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChaosRig, faultViolations, type Fault, type TrialOptions } from '../chaos/rig.js';

/**
 * The chaos suite's short form (`npm run chaos` runs many trials of every fault): two replicas of
 * every role on a NATS and a Redis of the test's own; while replies stream, one process is SIGKILLed
 * and restarted, the broker is SIGKILLed and restarted on its store, Redis restarts with its data
 * lost, or every replica is restarted with SIGTERM one after another. Every accepted message must still
 * end with exactly one final callback, in order, with rising sequences, and no session lease or
 * pipeline slot may stay taken.
 */
describe('chaos: faults while replies stream', () => {
  let rig: ChaosRig;
  const trial: TrialOptions = { sessions: 6, messagesPerSession: 3, outageMs: 3_000, deadlineMs: 150_000 };

  before(async () => {
    rig = await ChaosRig.start();
  });

  after(async () => {
    await rig?.stop();
  });

  const faults: Fault[] = ['runner', 'dispatcher', 'orchestrator', 'ingress', 'nats', 'redis', 'rolling'];
  for (const fault of faults) {
    test(`${fault}: nothing accepted is lost, duplicated or reordered`, async () => {
      const r = await rig.trial(fault, trial);
      assert.ok(r.accepted >= trial.sessions, `messages were accepted (${r.accepted})`);
      assert.deepEqual(faultViolations(fault, r), [], `${fault} trial: ${JSON.stringify({ ...r, logs: undefined })}\n${rig.sys.services.allLogs().split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-30).join('\n')}`);
    });
  }
});
