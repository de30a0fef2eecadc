import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { ensureStreams, natsServers } from '@conveyor/bus';
import { topology } from '@conveyor/contracts';
import { ChaosRig, CLUSTER_STREAM_REPLICAS, faultViolations, nodeFaultLine, type TrialOptions } from '../chaos/rig.js';
import { uniqueName } from '../harness/ids.js';

/**
 * The `nats-node` chaos fault's short form (`npm run chaos -- nats-node` runs many trials): the whole
 * system, two replicas of every role, on a 3-node NATS cluster of the test's own with every stream at
 * R3. While replies stream, one node is SIGKILLed (the runs or events stream's leader, or a follower),
 * a message is sent while it is away, and the node comes back (its store wiped, or on it). Nothing
 * accepted may be lost, duplicated or reordered, the message sent during the fault must be answered,
 * and the cluster must heal with no manual step.
 */
describe('chaos: a NATS cluster node lost while replies stream', () => {
  let rig: ChaosRig;
  const trial: TrialOptions = { sessions: 6, messagesPerSession: 2, outageMs: 5_000, deadlineMs: 150_000 };

  before(async () => {
    rig = await ChaosRig.start({}, { natsCluster: true });
  });

  after(async () => {
    await rig?.stop();
  });

  test('every stream runs at R3; replicas change in place and too many are refused with the setting named', async () => {
    const cluster = rig.natsCluster!;
    const nc = await connect({ servers: natsServers(cluster.url) });
    try {
      const jsm = await jetstreamManager(nc);
      for (const spec of Object.values(rig.sys.topology.streams)) {
        const info = await jsm.streams.info(spec.name);
        assert.equal(info.config.num_replicas, CLUSTER_STREAM_REPLICAS, spec.name);
        assert.equal(1 + (info.cluster?.replicas?.length ?? 0), CLUSTER_STREAM_REPLICAS, `${spec.name} placed on three nodes`);
      }
      // A deployment that had one copy and is given three.
      const spec = topology(uniqueName('r')).streams.runs;
      try {
        const [one] = await ensureStreams(jsm, [spec], { replicas: 1 });
        assert.equal(one.config.num_replicas, 1);
        const [three] = await ensureStreams(jsm, [spec], { replicas: 3 });
        assert.equal(three.config.num_replicas, 3);
        assert.equal(three.created, one.created, 'updated, not recreated');
        await cluster.waitStreamsCurrent([spec.name]);
        await assert.rejects(ensureStreams(jsm, [spec], { replicas: 5 }), /NATS_STREAM_REPLICAS is 5, but JetStream cannot place 5 replicas/);
      } finally {
        await jsm.streams.delete(spec.name).catch(() => undefined);
      }
    } finally {
      await nc.close();
    }
  });

  // The first trial kills a stream leader and wipes its store, the second a follower restarted on its store; both under a burst.
  for (const n of [1, 2]) {
    test(`trial ${n}: nothing accepted is lost, duplicated or reordered, and a message sent meanwhile is answered`, async (t) => {
      const r = await rig.trial('nats-node', trial);
      t.diagnostic(nodeFaultLine(r));
      assert.ok(r.accepted >= trial.sessions, `messages were accepted (${r.accepted})`);
      assert.deepEqual(faultViolations('nats-node', r), [], `nats-node trial: ${JSON.stringify(r)}\n${rig.sys.services.allLogs().split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-30).join('\n')}`);
    });
  }
});
