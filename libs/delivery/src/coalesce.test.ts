import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import { planBatch } from './coalesce.js';
import type { BatchEntry } from '@conveyor/message-state';

const route: ReplyRoute = { botId: 'b1', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'in_x' };
let n = 0;
const part = (message: MessageChain, stream = true, isFinal = false, queryId = 'q'): BatchEntry => ({ t: 'part', part: { route, reply: { message, stream, isFinal }, queryId, key: `1:${n++}:0` } });
const plain = (text: string, o: { stream?: boolean; isFinal?: boolean; queryId?: string } = {}) => part([{ type: 'Plain', text }], o.stream, o.isFinal, o.queryId);
const texts = (entries: BatchEntry[]) => planBatch(entries, {}).send.map((s) => (s.part.reply.message[0] as { text: string }).text);

test('a snapshot is replaced only by a newer snapshot that extends its text', () => {
  assert.deepEqual(texts([plain('Hel'), plain('Hello'), plain('Hello wor'), plain('Hello world', { isFinal: true })]), ['Hello world']);
});

test('the text before a tool round and the tool-call notice are not lost to the next round\'s snapshots', () => {
  // Round 0 ends with text and tool calls, track-function-calls shows `Call ...`, round 1 starts from empty text.
  const plan = planBatch([plain('Let me'), plain('Let me check.'), plain('Call weather...'), plain('Sunny'), plain('Sunny in Oslo.', { isFinal: true })], {});
  assert.deepEqual(plan.send.map((s) => (s.part.reply.message[0] as { text: string }).text), ['Let me check.', 'Call weather...', 'Sunny in Oslo.']);
  assert.equal(plan.coalesced, 2);
  assert.deepEqual(plan.send.map((s) => s.chunkOrdinal), [2, 3, 5]);
});

test('a later round whose text happens to start like the earlier one is still a new round once something else came between', () => {
  assert.deepEqual(texts([plain('I'), plain('Call f...'), plain('I found it', { isFinal: true })]), ['I', 'Call f...', 'I found it']);
});

test('a snapshot whose text changed rather than grew (a mask, a closed tag) is sent, not skipped', () => {
  assert.deepEqual(texts([plain('so bad'), plain('so ***day'), plain('so ***day!', { isFinal: true })]), ['so bad', 'so ***day!']);
});

test('the at-sender mention in front does not stop coalescing; another reply\'s parts do not supersede', () => {
  const at = { type: 'At' as const, target: 'u7', display: '' };
  const plan = planBatch([part([at, { type: 'Plain', text: 'Hi' }]), plain('other', { queryId: 'q2' }), part([at, { type: 'Plain', text: 'Hi there' }], true, true)], {});
  assert.deepEqual(plan.send.map((s) => s.part.reply.message), [[{ type: 'Plain', text: 'other' }], [at, { type: 'Plain', text: 'Hi there' }]]);
  assert.equal(planBatch([part([at, { type: 'Plain', text: 'Hi' }]), part([{ type: 'Plain', text: 'Hi there' }], true, true)], {}).send.length, 2);
});

test('finals and whole replies are never skipped', () => {
  assert.deepEqual(texts([plain('a'), plain('whole', { stream: false, isFinal: true }), plain('ab'), plain('ab', { isFinal: true })]), ['whole', 'ab']);
});
