import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';
import { replyText } from './runner-support.js';

/**
 * A run that kills every runner taking it: after the consumer's max_deliver (5) JetStream gives up on
 * it and announces that with a MAX_DELIVERIES advisory. The runner that hears it tells the user (the
 * pipeline's failure hint) and records why on the query; nothing else reaches the user.
 */
describe('runner max deliveries', () => {
  let sys: TestSystem;
  const hint = 'Sorry, the assistant gave up on this one (e2e).';
  const sessionId = 'maxdeliver-1';

  before(async () => {
    // A short ack wait so each dead runner's run comes back within seconds (production: 60 s).
    sys = await startTestSystem({
      startServices: false,
      pipelineConfig: { output: { misc: { 'failure-hint': hint } } },
      serviceEnv: { RUNNER_ACK_WAIT_MS: '2000' },
    });
    await Promise.all([sys.services.start('ingress'), sys.services.start('orchestrator'), sys.services.start('dispatcher')]);
  });

  after(async () => {
    await sys?.stop();
  });

  test('every delivery dies with its runner: one final reply with the failure hint, the query record failed naming max deliveries', async () => {
    const maxDeliver = sys.topology.consumers.runner.maxDeliver;
    // The model never answers within an attempt: each runner is killed while it waits for the first token.
    // (Not longer than needed: the fake keeps sleeping after the runner is gone.)
    sys.llm.setDefault({ text: 'too late', delayFirstTokenMs: 30_000 });
    const res = await sys.post({ session_id: sessionId, sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text: 'never answered' }] });
    assert.equal(res.status, 202);
    const { data } = (await res.json()) as { data: { accepted_message_id: string } };
    const replyTo = data.accepted_message_id;
    const replies = (): ReceivedCallback[] => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo);

    for (let attempt = 1; attempt <= maxDeliver; attempt++) {
      const instance = `runner-${attempt}`;
      const runner = await sys.services.start('runner', {}, instance);
      await waitUntil(`${instance} starts attempt ${attempt}`, () =>
        runner.logs.some((l) => l.includes('run started') && l.includes(`"attempt":${attempt}`)), 30_000)
        .catch(async (err: Error) => { (await import('node:fs')).writeFileSync('/tmp/md-logs.txt', sys.services.allLogs()); assert.fail(`${err.message}`); });
      // Mid-run: the runner is waiting on the model.
      await waitUntil(`model request of attempt ${attempt}`, () => sys.llm.requests.length >= attempt, 15_000);
      await sys.services.kill(instance, 'SIGKILL');
      assert.equal(replies().length, 0, `nothing reached the user after attempt ${attempt}`);
    }

    // A healthy runner: JetStream will not deliver the run again, it reports the max deliveries instead.
    const last = await sys.services.start('runner', {}, 'runner-last');
    const finals = await sys.callbacks
      .waitFor(() => replies().some((c) => c.json.is_final === true), 60_000)
      .catch((err: Error) => assert.fail(`${err.message}\n${sys.services.allLogs().slice(-4000)}`))
      .then(() => replies().filter((c) => c.json.is_final === true));
    assert.equal(finals.length, 1);
    assert.equal(replyText(finals[0]), hint, 'the pipeline failure hint');
    assert.equal(finals[0].signatureValid, true);
    assert.equal(replies().length, 1, 'no partial reply before it');

    const prisma = createPrismaClient(sys.db.url);
    try {
      const record = await waitUntil('query record failed', async () => {
        const row = await prisma.queryRecord.findFirst({ where: { botId: sys.botId, launcherId: sessionId } });
        return row?.status === 'failed' ? row : undefined;
      }, 20_000);
      assert.match(record.error ?? '', new RegExp(`after ${maxDeliver} deliveries \\(max ${maxDeliver}\\)`));
    } finally {
      await prisma.$disconnect();
    }

    // The run is gone: it is never run again, and no second reply arrives (several ack waits later).
    await new Promise((r) => setTimeout(r, 8_000));
    assert.equal(replies().length, 1, 'exactly one reply in total');
    assert.ok(!last.logs.some((l) => l.includes('run started')), 'the last runner never ran it');
    assert.ok(last.logs.some((l) => l.includes('run abandoned after')), 'the last runner handled the advisory');
    assert.equal(sys.llm.requests.length, maxDeliver, 'one model call per delivery, none after');
    // Removed from the work queue rather than left there unacked until max age.
    const nc = await connect({ servers: NATS_URL });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(sys.topology.streams.runs.name);
      assert.equal(info.state.messages, 0, 'the run left the runs stream');
    } finally {
      await nc.close();
    }
  });
});
