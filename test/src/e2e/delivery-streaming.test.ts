import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { EventPublisher, route } from '../harness/events.js';
import type { ReceivedCallback } from '../fakes/index.js';

/**
 * Streaming delivery to an HTTP-bot callback through two dispatcher replicas, driven by runner events
 * published straight onto the events stream (the most precise way to control order and timing).
 */
function assertOneCleanReply(all: ReceivedCallback[], replyTo: string, fullText: string) {
  const mine = all.filter((c) => c.json?.reply_to === replyTo);
  // A part re-sent after a crash is byte-identical (same sequence): the receiver's idempotency key.
  const distinct = [...new Map(mine.map((c) => [c.rawBody.toString('utf8'), c])).values()];
  assert.ok(distinct.every((c) => c.signatureValid), 'every callback is signed');
  const seqs = distinct.map((c) => c.json.sequence as number);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `parts in sequence order: ${seqs}`);
  assert.equal(new Set(seqs).size, seqs.length, `no sequence twice with different content: ${seqs}`);
  assert.equal(seqs[0], 1, 'the reply starts at sequence 1');
  const finals = distinct.filter((c) => c.json.is_final);
  assert.equal(finals.length, 1, 'exactly one is_final part');
  assert.equal(distinct.at(-1)!.json.is_final, true, 'the final part is the last one');
  assert.deepEqual(finals[0].json.message, [{ type: 'Plain', text: fullText }]);
  assert.ok(distinct.every((c) => c.json.stream === true));
  const lengths = distinct.map((c) => (c.json.message[0]?.text ?? '').length);
  assert.deepEqual(lengths, [...lengths].sort((a, b) => a - b), 'a stale snapshot never follows a newer one');
  return distinct;
}

describe('HTTP-bot streaming delivery across dispatcher replicas', () => {
  let sys: TestSystem;
  let events: EventPublisher;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    await sys.services.start('ingress');
    await sys.services.start('dispatcher', {}, 'dispatcher-a');
    await sys.services.start('dispatcher', {}, 'dispatcher-b');
    events = await EventPublisher.connect(sys.topology);
  });

  after(async () => {
    await events?.close();
    await sys?.stop();
  });

  test('a streamed reply arrives in order, sequences increasing, exactly one is_final', async () => {
    const r = route(sys.botId, `stream-${randomUUID()}`);
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`);
    const text = await events.streamReply(r, randomUUID(), words);
    const all = await sys.callbacks.waitFor((cs) => cs.some((c) => c.json?.reply_to === r.replyTo && c.json.is_final), 30_000);
    const parts = assertOneCleanReply(all, r.replyTo, text);
    assert.ok(parts.length >= 1 && parts.length <= words.length);
  });

  test('a redelivered event does not produce a second message', async () => {
    const r = route(sys.botId, `redeliver-${randomUUID()}`);
    const q = randomUUID();
    await events.publish(r, q, 1, 0, { kind: 'chunk', text: 'Hello', isFinal: false, hasToolCalls: false });
    await sys.callbacks.waitFor((cs) => cs.some((c) => c.json?.reply_to === r.replyTo), 20_000);
    // The same event again under a new bus id (JetStream would not de-duplicate it): Redis does.
    const js = (events as any).nc;
    const { jetstream } = await import('@nats-io/jetstream');
    await jetstream(js).publish(sys.topology.subjects.event(r.botId), JSON.stringify({ v: 1, queryId: q, route: r, attempt: 1, seq: 0, kind: 'chunk', text: 'Hello', isFinal: false, hasToolCalls: false }), { msgID: `again-${randomUUID()}` });
    await events.publish(r, q, 1, 1, { kind: 'chunk', text: 'Hello world', isFinal: true, hasToolCalls: false });
    await events.publish(r, q, 1, 2, { kind: 'done' });
    const all = await sys.callbacks.waitFor((cs) => cs.some((c) => c.json?.reply_to === r.replyTo && c.json.is_final), 20_000);
    await new Promise((res) => setTimeout(res, 500));
    const parts = assertOneCleanReply(sys.callbacks.received, r.replyTo, 'Hello world');
    assert.deepEqual(parts.map((c) => c.json.message[0].text), ['Hello', 'Hello world']);
    assert.ok(all.length >= 2);
  });

  test('SIGKILL of one dispatcher mid-stream: no duplicate and no missing final', async () => {
    const r = route(sys.botId, `kill-${randomUUID()}`);
    const words = Array.from({ length: 24 }, (_, i) => `k${i}`);
    const text = await events.streamReply(r, randomUUID(), words, {
      gapMs: 40,
      onChunk: async (i) => {
        if (i === 8) await sys.services.kill('dispatcher-a', 'SIGKILL');
      },
    });
    // Events the killed replica had pulled come back after the consumer's ack wait (30 s).
    const all = await sys.callbacks.waitFor((cs) => cs.some((c) => c.json?.reply_to === r.replyTo && c.json.is_final), 90_000);
    assertOneCleanReply(all, r.replyTo, text);
  });
});
