import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { SessionLeases } from '@conveyor/message-state';
import { REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import type { ReceivedCallback } from '../fakes/index.js';

/**
 * The dispatcher's last steps of a reply: it stores the reply's last event, ends the session's turn
 * and takes the batch holding the event, in one call (on a Redis Cluster the turn ends in a call of its
 * own while the final part goes out), then records the batch.
 * A replica SIGKILLed while the final part is at the platform, before the record landed, leaves the
 * batch in Redis: the session's next message runs meanwhile, and the replica that takes the session
 * over sends the final part again byte for byte, then the next reply, in that order.
 */
describe('a dispatcher killed while the final part is at the platform', () => {
  let sys: TestSystem;
  let redis: Redis;
  /** The final part held open at the integrator; resolved once it arrived there. */
  let heldArrived: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => (heldArrived = resolve));
  let letGo: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  let holding = true;

  before(async () => {
    sys = await startTestSystem({
      startServices: false,
      callbackRespond: async (_n, callback) => {
        const text = callback.json?.message?.[0]?.text;
        if (holding && callback.json?.is_final === true && text === 'first answer') {
          holding = false;
          heldArrived();
          await released;
        }
        return 200;
      },
    });
    redis = new Redis(REDIS_URL);
    await Promise.all([sys.services.start('ingress'), sys.services.start('orchestrator'), sys.services.start('runner'), sys.services.start('dispatcher', {}, 'dispatcher-a')]);
  });

  after(async () => {
    letGo();
    redis?.disconnect();
    await sys?.stop();
  });

  test('the next message runs meanwhile; the next replica sends the final part again identically, then the next reply', async () => {
    const session = uniqueName('settle');
    sys.llm.setDefault((body) => ({ text: JSON.stringify(body.messages?.at(-1)?.content ?? '').includes('first question') ? 'first answer' : 'second answer' }));
    const post = async (text: string) => {
      const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202);
      return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    };
    const first = await post('first question');
    await arrived;
    await sys.services.kill('dispatcher-a', 'SIGKILL');
    letGo();

    const leases = new SessionLeases(redis, sys.prefix);
    const route = { botId: sys.botId, adapter: 'http-bot' as const, launcherType: 'person' as const, launcherId: session };
    const second = await post('second question');
    // The first turn ended as its last event was stored (taken, on a Redis Cluster): the next message runs with no dispatcher up.
    await waitUntil('the second message reaching the model', () => sys.llm.requests.some((r) => JSON.stringify(r.body).includes('second question')), 60_000);
    assert.equal(sys.callbacks.received.filter((c) => c.json?.reply_to === second).length, 0, 'nothing of the second reply went out yet');
    await sys.services.start('dispatcher', {}, 'dispatcher-b');
    const finalsOf = (all: ReceivedCallback[], replyTo: string) => all.filter((c) => c.json?.reply_to === replyTo && c.json.is_final === true);
    const all = await sys.callbacks.waitFor((cs) => finalsOf(cs, second).length > 0, 90_000);

    const firstFinals = finalsOf(all, first);
    assert.ok(firstFinals.length >= 2, `the final part was sent again after the kill (${firstFinals.length} arrived)`);
    assert.equal(new Set(firstFinals.map((c) => c.rawBody.toString('utf8'))).size, 1, 'every copy of the final part is byte-identical (same sequence)');
    assert.deepEqual(firstFinals[0].json.message, [{ type: 'Plain', text: 'first answer' }]);

    const secondFinals = finalsOf(all, second);
    assert.equal(secondFinals.length, 1);
    assert.deepEqual(secondFinals[0].json.message, [{ type: 'Plain', text: 'second answer' }]);
    assert.ok(secondFinals[0].receivedAt > firstFinals.at(-1)!.receivedAt, 'the next reply comes after the first one was sent again');
    await waitUntil('the session freed after the second reply', async () => (await leases.holder(route)) === null, 30_000);
  });
});
