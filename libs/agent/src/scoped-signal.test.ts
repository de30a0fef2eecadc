import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { scopedSignal } from './scoped-signal.js';

test('scopedSignal follows its parent until released, with one listener on the parent however many scopes', () => {
  const parent = new AbortController();
  const a = scopedSignal(parent.signal);
  const many = Array.from({ length: 100 }, () => scopedSignal(parent.signal));
  const b = scopedSignal(parent.signal);
  assert.equal(getEventListeners(parent.signal, 'abort').length, 1);
  a.release();
  for (const s of many) s.release();
  parent.abort(new Error('stopping'));
  assert.equal(b.signal?.aborted, true, 'a live scope is aborted with its parent');
  assert.equal((b.signal?.reason as Error).message, 'stopping');
  assert.equal(a.signal?.aborted, false, 'a released scope no longer follows');
  assert.equal(many.some((s) => s.signal?.aborted), false);
  assert.equal(scopedSignal(parent.signal).signal?.aborted, true, 'a scope of an aborted parent starts aborted');
  assert.equal(scopedSignal(undefined).signal, undefined);
});
