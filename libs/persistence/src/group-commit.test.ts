import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommit, GroupCommitFullError } from './group-commit.js';

test('items added together are written as one group, in order', async () => {
  const groups: number[][] = [];
  const gc = new GroupCommit<number>({ write: async (items) => void groups.push(items), delayMs: 5 });
  for (let i = 0; i < 10; i++) gc.add(i);
  await gc.flush();
  assert.deepEqual(groups, [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]);
});

test('a group never exceeds maxBatch and groups are written one after another', async () => {
  const groups: number[][] = [];
  let writing = 0;
  const gc = new GroupCommit<number>({
    maxBatch: 3,
    write: async (items) => {
      assert.equal(writing++, 0, 'no two groups at once');
      await new Promise((r) => setImmediate(r));
      groups.push(items);
      writing--;
    },
  });
  for (let i = 0; i < 7; i++) gc.add(i);
  await gc.flush();
  assert.deepEqual(groups, [[0, 1, 2], [3, 4, 5], [6]]);
});

test('a failed group is reported with its items and later groups still go out', async () => {
  const failed: number[][] = [];
  const written: number[][] = [];
  let first = true;
  const gc = new GroupCommit<number>({
    write: async (items) => {
      if (first) {
        first = false;
        throw new Error('database down');
      }
      written.push(items);
    },
    onError: (_err, items) => failed.push(items),
  });
  gc.add(1);
  await gc.flush();
  gc.add(2);
  await gc.flush();
  assert.deepEqual(failed, [[1]]);
  assert.deepEqual(written, [[2]]);
});

test('past maxPending an add is refused instead of growing without bound', () => {
  const gc = new GroupCommit<number>({ write: () => new Promise(() => undefined), maxPending: 2, delayMs: 1000 });
  gc.add(1);
  gc.add(2);
  assert.throws(() => gc.add(3), GroupCommitFullError);
});
