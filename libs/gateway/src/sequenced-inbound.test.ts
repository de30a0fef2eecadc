import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SequencedInbound } from './sequenced-inbound.js';

const later = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

test('the handled sequence number never runs ahead of a message still being published', async () => {
  const handled: number[] = [];
  const inbound = new SequencedInbound({ onHandled: (s) => handled.push(s), onFailed: (err) => assert.fail(String(err)) });
  inbound.skip(1);
  assert.deepEqual(handled, [1]);
  const first = later();
  const order: number[] = [];
  inbound.push(2, async () => { await first.promise; order.push(2); });
  inbound.skip(3);
  inbound.push(4, async () => { order.push(4); });
  inbound.skip(5);
  assert.deepEqual(handled, [1], 'nothing past 1 while message 2 waits');
  first.resolve();
  await inbound.drained();
  assert.deepEqual(order, [2, 4], 'published in arrival order');
  assert.equal(handled.at(-1), 5, 'with nothing waiting, every event seen is handled');
  assert.ok(handled.every((s, i) => i === 0 || s > handled[i - 1]), `rising: ${handled}`);
});

test('a full queue refuses the message; a failed publish is reported and does not stop the ones after it', async () => {
  const failures: unknown[] = [];
  const handled: number[] = [];
  const inbound = new SequencedInbound({ onHandled: (s) => handled.push(s), onFailed: (err) => failures.push(err), maxQueued: 2 });
  const gate = later();
  assert.equal(inbound.push(1, () => gate.promise.then(() => { throw new Error('bus down'); })), true);
  assert.equal(inbound.push(2, async () => undefined), true);
  assert.equal(inbound.push(3, async () => undefined), false);
  assert.equal(inbound.waiting, 2);
  gate.resolve();
  await inbound.drained();
  assert.equal(failures.length, 1);
  assert.equal(handled.at(-1), 2);
});

test('after a reset the numbers start over', async () => {
  const handled: number[] = [];
  const inbound = new SequencedInbound({ onHandled: (s) => handled.push(s), onFailed: () => undefined });
  inbound.skip(10);
  inbound.reset();
  inbound.skip(1);
  assert.deepEqual(handled, [10, 1]);
});
