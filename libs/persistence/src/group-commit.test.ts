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

test('a group whose write fails retryably is written again, whole, and later groups wait behind it', async () => {
  const attempts: number[][] = [];
  const retried: number[][] = [];
  const failed: number[][] = [];
  let failures = 2;
  const gc = new GroupCommit<number>({
    write: async (items) => {
      attempts.push(items);
      if (items.includes(1) && failures-- > 0) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
    },
    retryable: (err) => (err as { code?: string }).code === '40P01',
    retryForMs: 60_000,
    onRetry: (_err, items) => retried.push(items),
    onError: (_err, items) => failed.push(items),
  });
  gc.add(1);
  const first = gc.flush();
  gc.add(2);
  await Promise.all([first, gc.flush()]);
  assert.deepEqual(attempts, [[1], [1], [1], [2]], 'the same group three times, then the next');
  assert.deepEqual(retried, [[1], [1]]);
  assert.deepEqual(failed, []);
});

test('a group is reported once its retries run past the bound, and at once when its failure is not retryable', async () => {
  const failed: string[] = [];
  let writes = 0;
  const gc = new GroupCommit<string>({
    write: async (items) => {
      writes++;
      throw Object.assign(new Error(items[0]), { code: items[0] === 'conflict' ? '40001' : '22P05' });
    },
    retryable: (err) => (err as { code?: string }).code === '40001',
    retryForMs: 250,
    onError: (err) => failed.push((err as Error).message),
  });
  gc.add('conflict');
  await gc.flush();
  assert.deepEqual(failed, ['conflict']);
  assert.ok(writes >= 2, `tried again before giving up (${writes} writes)`);
  writes = 0;
  gc.add('bad text');
  await gc.flush();
  assert.deepEqual(failed, ['conflict', 'bad text']);
  assert.equal(writes, 1, 'a write that cannot succeed is not tried again');
});

test('a group refused for one of its items is split until only that item is reported; the others are written', async () => {
  const writes: number[][] = [];
  const written: number[] = [];
  const failed: number[][] = [];
  const gc = new GroupCommit<number>({
    write: async (items) => {
      writes.push(items);
      if (items.includes(5)) throw Object.assign(new Error('integer out of range'), { code: '22003' });
      written.push(...items);
    },
    isolatable: (err) => (err as { code?: string }).code === '22003',
    onError: (_err, items) => failed.push(items),
  });
  for (let i = 0; i < 8; i++) gc.add(i);
  await gc.flush();
  assert.deepEqual(failed, [[5]]);
  assert.deepEqual(written, [0, 1, 2, 3, 4, 6, 7], 'the others, in their order');
  assert.ok(writes.length <= 2 * 8 - 1, `at most two writes per item (${writes.length})`);
});

test('a failure that is not an item\'s is reported for the whole group without splitting it', async () => {
  const writes: number[][] = [];
  const failed: number[][] = [];
  const gc = new GroupCommit<number>({
    write: async (items) => {
      writes.push(items);
      throw Object.assign(new Error('syntax error'), { code: '42601' });
    },
    isolatable: (err) => (err as { code?: string }).code === '22003',
    onError: (_err, items) => failed.push(items),
  });
  for (let i = 0; i < 4; i++) gc.add(i);
  await gc.flush();
  assert.deepEqual(writes, [[0, 1, 2, 3]]);
  assert.deepEqual(failed, [[0, 1, 2, 3]]);
});
