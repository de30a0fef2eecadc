import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { scopedSignal } from './scoped-signal.js';

test('scopedSignal follows its parent until released, then leaves nothing on it', () => {
  const parent = new AbortController();
  const a = scopedSignal(parent.signal);
  const b = scopedSignal(parent.signal);
  assert.equal(getEventListeners(parent.signal, 'abort').length, 2);
  a.release();
  assert.equal(getEventListeners(parent.signal, 'abort').length, 1);
  parent.abort(new Error('stopping'));
  assert.equal(b.signal?.aborted, true, 'a live scope is aborted with its parent');
  assert.equal((b.signal?.reason as Error).message, 'stopping');
  assert.equal(a.signal?.aborted, false, 'a released scope no longer follows');
  assert.equal(scopedSignal(parent.signal).signal?.aborted, true, 'a scope of an aborted parent starts aborted');
  assert.equal(scopedSignal(undefined).signal, undefined);
});
