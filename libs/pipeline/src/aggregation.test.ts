import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { QueryEnvelope } from '@conveyor/contracts';
import { aggregationSettings, mergeEnvelopes, mergeMessageChains } from './aggregation.js';
import { parsePipelineConfig } from './config/load.js';

function settings(section: Record<string, unknown>) {
  const parsed = parsePipelineConfig({ trigger: { 'message-aggregation': section } });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return aggregationSettings(parsed.config);
}

test('message-aggregation: off by default, delay 1.5 s; seconds clamped to [1, 10] as LangBot does', () => {
  assert.deepEqual(settings({}), { enabled: false, delayMs: 1500 });
  assert.deepEqual(settings({ enabled: true }), { enabled: true, delayMs: 1500 });
  assert.deepEqual(settings({ enabled: 'true', delay: '2.25' }), { enabled: true, delayMs: 2250 }, 'strings coerced like LangBot');
  assert.equal(settings({ enabled: true, delay: 0.2 }).delayMs, 1000);
  assert.equal(settings({ enabled: true, delay: 0 }).delayMs, 1000);
  assert.equal(settings({ enabled: true, delay: 60 }).delayMs, 10_000);
  assert.equal(settings({ enabled: false, delay: 3 }).enabled, false);
});

test('merged chain: every component in order, Plain("\\n") between messages, Source and other components kept', () => {
  const merged = mergeMessageChains([
    [{ type: 'Source', id: 1, timestamp: 10 }, { type: 'Plain', text: 'first' }],
    [{ type: 'Plain', text: 'second' }, { type: 'Image', image_id: 'i', url: 'https://x/i.png', path: '', base64: '' }],
    [{ type: 'At', target: 'bot', display: '' }, { type: 'Plain', text: 'third' }],
  ]);
  assert.deepEqual(merged, [
    { type: 'Source', id: 1, timestamp: 10 },
    { type: 'Plain', text: 'first' },
    { type: 'Plain', text: '\n' },
    { type: 'Plain', text: 'second' },
    { type: 'Image', image_id: 'i', url: 'https://x/i.png', path: '', base64: '' },
    { type: 'Plain', text: '\n' },
    { type: 'At', target: 'bot', display: '' },
    { type: 'Plain', text: 'third' },
  ]);
  assert.deepEqual(mergeMessageChains([[{ type: 'Plain', text: 'only' }]]), [{ type: 'Plain', text: 'only' }], 'one message: unchanged');
});

test('merged envelope: the first message\'s id, route, sender and arrival; the chains merged', () => {
  const envelope = (n: number, senderId: string): QueryEnvelope => ({
    v: 1,
    queryId: `00000000-0000-4000-8000-00000000000${n}`,
    receivedAt: `2026-01-05T08:00:0${n}.000Z`,
    route: { botId: 'b', adapter: 'http-bot', sessionId: 'g', launcherType: 'group', launcherId: 'g', senderId, replyTo: `in_${n}` },
    senderName: `user ${senderId}`,
    groupName: 'Room',
    messageChain: [{ type: 'Plain', text: `m${n}` }],
  });
  const first = envelope(1, 'u1');
  const merged = mergeEnvelopes(first, [envelope(2, 'u2'), envelope(3, 'u3')]);
  assert.deepEqual(merged, {
    ...first,
    messageChain: [
      { type: 'Plain', text: 'm1' }, { type: 'Plain', text: '\n' }, { type: 'Plain', text: 'm2' }, { type: 'Plain', text: '\n' }, { type: 'Plain', text: 'm3' },
    ],
  });
  assert.deepEqual(first.messageChain, [{ type: 'Plain', text: 'm1' }], 'the first envelope is not changed');
  assert.equal(mergeEnvelopes(first, []), first);
});
