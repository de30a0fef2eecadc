import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { RunnerEvent } from '@conveyor/contracts';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';

/**
 * A reply's answer is the run's last event: it goes out after the turn is in history, marked `last`,
 * and no `done` follows it, so a short reply is one event on every hop.
 */
describe('a short reply on the event stream', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  const events: RunnerEvent[] = [];

  before(async () => {
    sys = await startTestSystem();
    nc = await connect({ servers: NATS_URL });
    nc.subscribe(`${sys.prefix}.v1.event.>`, { callback: (_err, msg) => void events.push(RunnerEvent.parse(msg.json())) });
    await nc.flush();
  });

  after(async () => {
    await nc?.drain();
    await sys?.stop();
  });

  test('is its answer alone, marked last', async () => {
    sys.llm.setDefault({ text: 'the answer' });
    const res = await sys.post({ session_id: uniqueName('last'), message: [{ type: 'Plain', text: 'a question' }] });
    assert.equal(res.status, 202);
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === replyTo && c.json.is_final === true), 60_000);
    const mine = events.filter((e) => e.route.replyTo === replyTo);
    const last = mine.at(-1);
    assert.ok(last, 'the run published events');
    assert.equal(last.last, true, 'the last event is marked');
    assert.ok(last.kind === 'chunk' || last.kind === 'message', `the answer ends the reply (${last.kind})`);
    assert.equal(mine.filter((e) => e.kind === 'done').length, 0, 'no done follows');
    assert.equal(mine.filter((e) => e.last).length, 1);
  });
});
