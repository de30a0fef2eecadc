import { test } from 'node:test';
import assert from 'node:assert/strict';
import { replyEventGapMs, topology } from './topology.js';

test('a missing reply event is waited for past the redelivery of one a killed dispatcher had pulled', () => {
  const t = topology('gap-check');
  const ackWait = t.consumers.dispatcher.ackWaitMs;
  const gap = replyEventGapMs(t);
  // The redelivered copy must still be handled and stored before the gap ends.
  assert.ok(gap - ackWait >= 3_000, `gap ${gap} ms leaves ${gap - ackWait} ms after the ${ackWait} ms ack wait`);
  // A reply whose state Redis lost holds its session that long; a minute would stall chats visibly.
  assert.ok(gap <= 30_000, `gap ${gap} ms`);
});
