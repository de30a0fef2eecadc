import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reconnectBackoff } from './backoff.js';

test('reconnect delays double from the base and stop at the cap, jitter only shortening them', () => {
  const exact = reconnectBackoff(1_000, 30_000, () => 1);
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 100].map(exact), [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  const low = reconnectBackoff(1_000, 30_000, () => 0);
  assert.equal(low(1), 750);
  assert.equal(low(1_000_000), 22_500);
});
