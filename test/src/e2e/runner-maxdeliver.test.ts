import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { RunningService } from '../harness/services.js';
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
  let prisma: ReturnType<typeof createPrismaClient> | undefined;

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
    await prisma?.$disconnect();
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
    prisma = createPrismaClient(sys.db.url);
    const queryId = await waitUntil('query record', async () => (await prisma!.queryRecord.findFirst({ where: { botId: sys.botId, launcherId: sessionId } }))?.id, 20_000);
    const replies = (): ReceivedCallback[] => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo);

    // Two runner replicas at all times; kill whichever takes the run and start a fresh one, until
    // JetStream stops delivering it. (Delivery counts are JetStream's: a delivery to a dead runner's
    // open pull request counts too.) A replica is always connected to hear the advisory.
    const started = (logs: string[]) => logs.some((l) => l.includes('run started') && l.includes(queryId));
    const finalArrived = () => replies().some((c) => c.json.is_final === true);
    let killed = 0;
    let n = 0;
    const alive: RunningService[] = [];
    const debug = () => sys.services.allLogs().split('\n').filter((l) => /abandoned|run started|runner ready/.test(l)).join('\n');
    for (;;) {
      while (alive.length < 2) alive.push(await sys.services.start('runner', {}, `runner-${++n}`));
      assert.ok(killed <= 3 * maxDeliver, `the run was still being delivered after ${killed} killed runners:\n${debug()}`);
      const holder = await waitUntil('a runner takes the run, or the final reply arrives', () =>
        alive.find((r) => started(r.logs)) ?? (finalArrived() ? 'final' : undefined), 60_000)
        .catch((err: Error) => assert.fail(`${err.message}\n${debug()}`));
      if (holder === 'final') break;
      // Mid-run: the runner is waiting on the model.
      await waitUntil(`model request from ${holder.instance}`, () => sys.llm.requests.length > killed, 15_000);
      await sys.services.kill(holder.instance, 'SIGKILL');
      alive.splice(alive.indexOf(holder), 1);
      killed++;
      assert.equal(replies().filter((c) => c.json.is_final === true).length, 0, `no final reply while the run is still delivered (after ${holder.instance})`);
    }
    assert.ok(killed >= maxDeliver - 1, `runners killed: ${killed}`);
    const finals = replies().filter((c) => c.json.is_final === true);
    assert.equal(finals.length, 1);
    assert.equal(replyText(finals[0]), hint, 'the pipeline failure hint');
    assert.equal(finals[0].signatureValid, true);
    assert.equal(replies().length, 1, 'no partial reply before it');

    {
      const record = await waitUntil('query record failed', async () => {
        const row = await prisma!.queryRecord.findFirst({ where: { botId: sys.botId, launcherId: sessionId } });
        return row?.status === 'failed' ? row : undefined;
      }, 20_000);
      assert.match(record.error ?? '', new RegExp(`after ${maxDeliver} deliveries \\(max ${maxDeliver}\\)`));
    }

    // The run is gone: it is never run again, and no second reply arrives (several ack waits later).
    await new Promise((r) => setTimeout(r, 8_000));
    assert.equal(replies().length, 1, 'exactly one reply in total');
    assert.ok(alive.every((r) => !started(r.logs)), 'no live runner ran it after the last kill');
    assert.equal(alive.filter((r) => r.logs.some((l) => l.includes('run abandoned after'))).length, 1, `one live runner handled the advisory:\n${debug()}`);
    assert.equal(sys.llm.requests.length, killed, 'one model call per killed runner, none after');
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
