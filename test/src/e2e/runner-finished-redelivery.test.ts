import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { RunRequest, type RunnerEvent, type RunnerEventBody } from '@conveyor/contracts';
import { ConversationStore, createDatabase, type Database } from '@conveyor/persistence';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { replyText } from './runner-support.js';

/**
 * A runner that dies after it wrote the turn to history, before its run's last event went out: the
 * run is delivered again, and the runner that gets it must not run the model again, but must end the
 * reply, or the reply stays open and the session's next message waits for its whole lease.
 */
describe('a finished run delivered again', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let db: Database;
  const sessionId = `finished-redelivery-${Date.now()}`;

  before(async () => {
    sys = await startTestSystem({ startServices: false, serviceEnv: { RUNNER_ACK_WAIT_MS: '2000' } });
    await Promise.all([sys.services.start('ingress'), sys.services.start('orchestrator'), sys.services.start('dispatcher'), sys.services.start('runner')]);
    // The runners' consumer is provisioned; no runner runs until the test starts one.
    await sys.services.kill('runner', 'SIGTERM');
    nc = await connect({ servers: NATS_URL });
    db = createDatabase(sys.db.url);
  });

  after(async () => {
    await nc?.drain();
    await db?.pool.end();
    await sys?.stop();
  });

  test('ends the reply with its recorded last event; the session goes on to its next message', async () => {
    const post = async (text: string) => {
      const res = await sys.post({ session_id: sessionId, sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202);
      return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    };
    const first = await post('first question');

    // Play the runner that took the run and died: pull it from the runners' consumer without acking it.
    const { runs } = sys.topology.streams;
    const consumer = await jetstream(nc).consumers.get(runs.name, sys.topology.consumers.runner.durable);
    const msg = await waitUntil('the run of the first message', () => consumer.next({ expires: 2_000 }).then((m) => m ?? undefined), 30_000);
    const run = RunRequest.parse(msg.json());
    // It answered, wrote the turn (recording that its last event would be attempt 1, seq 1), and died
    // before publishing that last event.
    const answer: RunnerEvent = run.stream
      ? { v: 1, queryId: run.queryId, route: run.route, attempt: 1, seq: 0, kind: 'chunk', text: 'the first answer', isFinal: true, hasToolCalls: false }
      : { v: 1, queryId: run.queryId, route: run.route, attempt: 1, seq: 0, kind: 'message', message: { role: 'assistant', content: 'the first answer' } };
    await jetstream(nc).publish(sys.topology.subjects.event(run.route.botId), JSON.stringify(answer), { msgID: `evt:${run.queryId}:1:0` });
    const store = new ConversationStore(db);
    await store.completeTurn(
      { id: run.queryId, botId: run.route.botId, launcherType: run.route.launcherType, launcherId: run.route.launcherId },
      run.conversationId,
      [run.messages[run.messages.length - 1], { role: 'assistant', content: 'the first answer' }],
      { attempt: 1, seq: 1 },
    );
    const finals = (replyTo: string) => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo && c.json.is_final === true);
    await waitUntil('the first answer reaches the user', () => finals(first).length === 1, 30_000);

    const second = await post('second question');
    sys.llm.setDefault({ text: 'the second answer' });
    // The run comes back (ack wait 2 s) to a runner.
    await sys.services.start('runner');
    await waitUntil('the second message is answered', () => finals(second).length === 1, 60_000);
    assert.equal(replyText(finals(second)[0]), 'the second answer');
    assert.equal(finals(first).length, 1, 'the first reply ended once');
    assert.equal(sys.llm.requests.length, 1, 'the finished run did not call the model again');
  });

  test('whose answer was its unpublished last event: the answer reaches the user once, without running the model again', async () => {
    const session = `${sessionId}-answer`;
    // The runner of the first test goes away; the test plays the runner that takes the run and dies
    // after writing the turn, before its answer (the run's last event, attempt 1, seq 0) went out.
    await sys.services.kill('runner', 'SIGKILL');
    const res = await sys.post({ session_id: session, sender: { id: 'u2', name: 'Bob' }, message: [{ type: 'Plain', text: 'a question' }] });
    assert.equal(res.status, 202);
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    const requestsBefore = sys.llm.requests.length;
    const { runs } = sys.topology.streams;
    const consumer = await jetstream(nc).consumers.get(runs.name, sys.topology.consumers.runner.durable);
    const msg = await waitUntil('the run of the question', () => consumer.next({ expires: 2_000 }).then((m) => m ?? undefined), 30_000);
    const run = RunRequest.parse(msg.json());
    const answer: RunnerEventBody = run.stream
      ? { kind: 'chunk', text: 'the recorded answer', isFinal: true, hasToolCalls: false, last: true }
      : { kind: 'message', message: { role: 'assistant', content: 'the recorded answer' }, last: true };
    await new ConversationStore(db).completeTurn(
      { id: run.queryId, botId: run.route.botId, launcherType: run.route.launcherType, launcherId: run.route.launcherId },
      run.conversationId,
      [run.messages[run.messages.length - 1], { role: 'assistant', content: 'the recorded answer' }],
      { attempt: 1, seq: 0, event: answer },
    );
    const finals = () => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo && c.json.is_final === true);

    await sys.services.start('runner');
    await waitUntil('the recorded answer reaches the user', () => finals().length === 1, 60_000);
    assert.equal(replyText(finals()[0]), 'the recorded answer');
    assert.equal(sys.llm.requests.length, requestsBefore, 'the model was not called again');
    // The session is free again: its next message is answered.
    const next = await sys.post({ session_id: session, sender: { id: 'u2', name: 'Bob' }, message: [{ type: 'Plain', text: 'and then?' }] });
    const nextId = ((await next.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    await waitUntil('the next message is answered', () => sys.callbacks.received.some((c) => c.json?.reply_to === nextId && c.json.is_final === true), 60_000);
    assert.equal(finals().length, 1, 'the recorded answer went out once');
  });
});
