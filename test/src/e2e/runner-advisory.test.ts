import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';
import { replyText } from './runner-support.js';

/**
 * JetStream announces a run it gave up on (MAX_DELIVERIES) once, to whoever listens at that moment;
 * it may fire while no runner is connected (serving a dead runner's open pull). The advisory is kept
 * in a stream, so a runner started later still tells the user and removes the run.
 */
describe('a MAX_DELIVERIES advisory with no runner connected', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  const hint = 'Sorry, given up (advisory e2e).';

  before(async () => {
    sys = await startTestSystem({ startServices: false, pipelineConfig: { output: { misc: { 'failure-hint': hint } } } });
    await Promise.all([sys.services.start('ingress'), sys.services.start('orchestrator'), sys.services.start('dispatcher')]);
    nc = await connect({ servers: NATS_URL });
  });

  after(async () => {
    await nc?.close();
    await sys?.stop();
  });

  test('is answered by a runner that starts afterwards: the failure hint as the one final part', async () => {
    // Were the run executed instead, its answer would come long after the test's deadline.
    sys.llm.setDefault({ text: 'too late', delayFirstTokenMs: 120_000 });
    const res = await sys.post({ session_id: uniqueName('adv'), message: [{ type: 'Plain', text: 'given up on' }] });
    assert.equal(res.status, 202);
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    const jsm = await jetstreamManager(nc);
    const runs = sys.topology.streams.runs.name;
    const seq = await waitUntil('the run is in its stream', async () => (await jsm.streams.info(runs)).state.last_seq || undefined, 30_000);

    // The server's advisory, fired while no runner listens.
    const durable = sys.topology.consumers.runner.durable;
    nc.publish(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${runs}.${durable}`, JSON.stringify({
      type: 'io.nats.jetstream.advisory.v1.max_deliver', stream: runs, consumer: durable, stream_seq: seq, deliveries: 5,
    }));
    await nc.flush();

    await sys.services.start('runner');
    const finals = await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === replyTo && c.json.is_final === true), 60_000);
    const mine = finals.filter((c) => c.json?.reply_to === replyTo && c.json.is_final === true);
    assert.equal(mine.length, 1, 'one final part');
    assert.equal(replyText(mine[0]), hint);
    await waitUntil('the run is removed from its stream', async () => (await jsm.streams.getMessage(runs, { seq }).catch(() => null)) === null, 30_000);
  });
});
