import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommitFullError } from './group-commit.js';
import { StatementBatcher } from './statement-batcher.js';

interface Item { key: string; n: number }

/** A batcher whose writes are held until `release` is called, recording each batch. */
function held(opts: { maxBatch?: number; maxPending?: number; fail?: (items: Item[]) => boolean } = {}) {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const batcher = new StatementBatcher<Item, string>({
    ...opts,
    spanName: 'test.batch',
    keysOf: (i) => [i.key],
    runBatch: async (items) => {
      batches.push(items.map((i) => i.n));
      await new Promise<void>((resolve) => gates.push(resolve));
      if (opts.fail?.(items)) throw new Error(`batch ${items.map((i) => i.n).join(',')} failed`);
      return items.map((i) => `done ${i.n}`);
    },
  });
  const release = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()!();
  };
  return { batcher, batches, release };
}

test('a call with nothing in flight goes out at once and alone; those arriving meanwhile leave together', async () => {
  const { batcher, batches, release } = held();
  const first = batcher.run({ key: 'a', n: 1 });
  assert.deepEqual(batches, [[1]], 'written in the same tick, not after a delay');
  const later = [2, 3, 4].map((n) => batcher.run({ key: `k${n}`, n }));
  await release();
  assert.equal(await first, 'done 1');
  await release();
  assert.deepEqual(await Promise.all(later), ['done 2', 'done 3', 'done 4']);
  assert.deepEqual(batches, [[1], [2, 3, 4]]);
});

test('items of one key never share a batch and keep their order; others pass them', async () => {
  const { batcher, batches, release } = held();
  const all = [batcher.run({ key: 'x', n: 0 })];
  for (const [key, n] of [['a', 1], ['a', 2], ['b', 3], ['a', 4], ['c', 5]] as const) all.push(batcher.run({ key, n }));
  for (let i = 0; i < 4; i++) await release();
  await Promise.all(all);
  assert.deepEqual(batches, [[0], [1, 3, 5], [2], [4]]);
});

test('a batch never exceeds maxBatch', async () => {
  const { batcher, batches, release } = held({ maxBatch: 2 });
  const all = [0, 1, 2, 3, 4].map((n) => batcher.run({ key: `k${n}`, n }));
  for (let i = 0; i < 3; i++) await release();
  await Promise.all(all);
  assert.deepEqual(batches, [[0], [1, 2], [3, 4]]);
});

test('a failed batch is run again item by item: only the bad item fails', async () => {
  const { batcher, batches, release } = held({ fail: (items) => items.some((i) => i.n === 2) });
  const first = batcher.run({ key: 'x', n: 0 });
  const later = [1, 2, 3].map((n) => batcher.run({ key: `k${n}`, n }).then((r) => r, (err: Error) => err.message));
  for (let i = 0; i < 5; i++) await release();
  await first;
  assert.deepEqual(await Promise.all(later), ['done 1', 'batch 2 failed', 'done 3']);
  assert.deepEqual(batches, [[0], [1, 2, 3], [1], [2], [3]]);
});

test('calls beyond maxPending are refused while the database is stalled', async () => {
  const { batcher, release } = held({ maxPending: 2 });
  const inFlight = batcher.run({ key: 'a', n: 0 });
  const waiting = [batcher.run({ key: 'b', n: 1 }), batcher.run({ key: 'c', n: 2 })];
  await assert.rejects(batcher.run({ key: 'd', n: 3 }), GroupCommitFullError);
  await release();
  await release();
  assert.equal(await inFlight, 'done 0');
  assert.deepEqual(await Promise.all(waiting), ['done 1', 'done 2']);
});
