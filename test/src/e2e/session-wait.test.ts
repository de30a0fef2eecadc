import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';

/**
 * A session's next message waits for the reply in progress however long that reply takes: waiting
 * must not spend the message's deliveries (five, then the dead letters) while the first reply runs.
 */
describe('a message waiting for its session', () => {
  let sys: TestSystem;

  before(async () => {
    // Short holds, so that five deliveries would be spent long before the slow reply ends.
    sys = await startTestSystem({ serviceEnv: { SESSION_WAIT_HOLD_MS: '300' } });
  });

  after(async () => {
    await sys?.stop();
  });

  test('is answered after a reply longer than all its deliveries\' holds, in order', async () => {
    const session = uniqueName('wait');
    sys.llm.setDefault((body) => {
      const text = JSON.stringify(body.messages?.at(-1)?.content ?? '');
      return text.includes('slow question') ? { text: 'slow answer', delayFirstTokenMs: 12_000 } : { text: 'quick answer' };
    });
    const post = async (text: string) => {
      const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202);
      return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    };
    const first = await post('slow question');
    const second = await post('next question');
    const finals = await sys.callbacks.waitFor(
      (all) => [first, second].every((id) => all.some((c) => c.json?.reply_to === id && c.json.is_final === true)),
      120_000,
    );
    const finalOf = (id: string) => finals.find((c) => c.json?.reply_to === id && c.json.is_final === true)!;
    assert.match(JSON.stringify(finalOf(first).json.message), /slow answer/);
    assert.match(JSON.stringify(finalOf(second).json.message), /quick answer/);
    const firstOfSecond = finals.find((c) => c.json?.reply_to === second)!;
    assert.ok(firstOfSecond.n > finalOf(first).n, 'the second reply starts after the first one ended');
    assert.ok(sys.services.allLogs().includes('published again to keep its deliveries'), 'the waiting message was requeued');
  });
});
