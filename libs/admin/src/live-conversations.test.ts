import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { QueryEnvelope, RunnerEvent } from '@conveyor/contracts';
import { LiveConversations, type LiveChange } from './live-conversations.js';

const route = (launcherId: string) => ({ botId: 'b1', adapter: 'http-bot', sessionId: launcherId, launcherType: 'person' as const, launcherId, senderId: launcherId, replyTo: 'm1' });
const query = (queryId: string, launcherId: string, text: string): QueryEnvelope => ({ v: 1, queryId, receivedAt: new Date().toISOString(), route: route(launcherId), senderName: 'Ann', messageChain: [{ type: 'Plain', text }] });
const base = (queryId: string, launcherId: string, seq: number) => ({ v: 1 as const, queryId, route: route(launcherId), attempt: 1, seq });
const Q1 = '00000000-0000-4000-8000-000000000001';
const Q2 = '00000000-0000-4000-8000-000000000002';

test('a message and its streamed reply: the chat is listed as replying, the reply line grows under one id and ends final', () => {
  let now = 1_000_000;
  const live = new LiveConversations({ now: () => now });
  const changes: LiveChange[] = [];
  live.subscribe((c) => changes.push(c));
  live.onQuery(query(Q1, 'u1', 'where is my order?'));
  assert.deepEqual(live.list(true).map((s) => [s.launcherId, s.lastMessage, s.replying]), [['u1', 'where is my order?', true]]);
  now += 10;
  live.onEvent({ ...base(Q1, 'u1', 0), kind: 'chunk', text: 'It ', isFinal: false, hasToolCalls: false } satisfies RunnerEvent);
  live.onEvent({ ...base(Q1, 'u1', 1), kind: 'chunk', text: 'It shipped.', isFinal: true, hasToolCalls: false, last: true } satisfies RunnerEvent);
  const lines = live.transcript({ botId: 'b1', launcherType: 'person', launcherId: 'u1' }, true);
  assert.deepEqual(lines.map((l) => [l.role, l.text, l.final]), [['user', 'where is my order?', true], ['bot', 'It shipped.', true]]);
  assert.equal(live.list(true)[0]!.replying, false, 'the last event ends the reply');
  const entries = changes.filter((c) => c.type === 'entry').map((c) => (c.type === 'entry' ? c.entry(true) : null));
  assert.deepEqual(entries.map((e) => [e?.id, e?.text]), [[`${Q1}:user`, 'where is my order?'], [`${Q1}:bot`, 'It '], [`${Q1}:bot`, 'It shipped.']]);
});

test('text is hidden unless shown, its length kept; notices and errors are lines; events of unknown chats are ignored', () => {
  const live = new LiveConversations();
  live.onQuery(query(Q2, 'u2', 'secret plan'));
  live.onEvent({ ...base(Q2, 'u2', 0), kind: 'notice', text: 'slow down' } satisfies RunnerEvent);
  live.onEvent({ ...base(Q2, 'u2', 1), kind: 'error', error: 'model 500', userText: 'Something went wrong' } satisfies RunnerEvent);
  live.onEvent({ ...base(Q1, 'nobody', 0), kind: 'chunk', text: 'x', isFinal: true, hasToolCalls: false } satisfies RunnerEvent);
  assert.deepEqual(live.list(false).map((s) => [s.lastMessage, s.lastMessageChars, s.replying]), [[null, 11, false]]);
  const hidden = live.transcript({ botId: 'b1', launcherType: 'person', launcherId: 'u2' }, false);
  assert.deepEqual(hidden.map((l) => [l.role, l.text, l.chars]), [['user', null, 11], ['notice', null, 9], ['error', null, 20]]);
});

test('bounded: at most the chats and lines configured; a chat quiet past the window leaves the list', () => {
  let now = 0;
  const live = new LiveConversations({ maxSessions: 2, linesPerSession: 3, activeForMs: 60_000, now: () => now });
  for (let i = 0; i < 5; i++) live.onQuery(query(`00000000-0000-4000-8000-00000000001${i}`, 'a', `m${i}`));
  assert.deepEqual(live.transcript({ botId: 'b1', launcherType: 'person', launcherId: 'a' }, true).map((l) => l.text), ['m2', 'm3', 'm4']);
  live.onQuery(query(Q1, 'b', 'x'));
  live.onQuery(query(Q2, 'c', 'y'));
  assert.deepEqual(live.list(true).map((s) => s.launcherId).sort(), ['b', 'c']);
  now += 61_000;
  assert.deepEqual(live.list(true), []);
});
