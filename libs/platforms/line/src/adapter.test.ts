import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pushRetryKey } from './adapter.js';

test('the push retry key is a UUID fixed by the part, different for another part', () => {
  const key = pushRetryKey('q1', '1:0:0');
  assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(pushRetryKey('q1', '1:0:0'), key);
  assert.notEqual(pushRetryKey('q1', '1:0:1'), key);
});
