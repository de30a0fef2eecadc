import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmMessage } from '@conveyor/contracts';
import { fitHistory, jsonBytesAtMost } from './history-fit.js';

const bytes = (history: LlmMessage[]) => Buffer.byteLength(JSON.stringify(history)) - 1;

test('a history within the budget is returned as it is', () => {
  const history: LlmMessage[] = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }];
  assert.equal(fitHistory(history, 1_000), history);
});

test('the largest messages are cut first, keeping their start and saying so; images give way to a note', () => {
  const history: LlmMessage[] = [
    { role: 'user', content: 'q' },
    { role: 'assistant', content: 'a'.repeat(50_000) },
    { role: 'user', content: 'q2' },
    { role: 'tool', tool_call_id: 'c', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(300_000)}` } }, { type: 'text', text: 'caption' }] },
  ];
  const fitted = fitHistory(history, 100_000);
  assert.ok(bytes(fitted) <= 100_000, `${bytes(fitted)} bytes`);
  assert.equal(fitted.length, 4);
  assert.deepEqual(fitted[3].content, [{ type: 'text', text: '[image left out: the conversation was over the bus bound]' }, { type: 'text', text: 'caption' }]);
  assert.equal(fitted[1].content, 'a'.repeat(50_000), 'the image alone was enough');
  const tight = fitHistory(history, 20_000);
  assert.ok(bytes(tight) <= 20_000, `${bytes(tight)} bytes`);
  assert.match(tight[1].content as string, /^a+\n\[\.\.\. \d+ characters cut: the conversation was over the bus bound\]$/);
  assert.deepEqual([tight[0], tight[2]], [history[0], history[2]]);
});

test('a cut never splits a surrogate pair', () => {
  const history: LlmMessage[] = [{ role: 'assistant', content: '😀'.repeat(40_000) }];
  for (const budget of [20_001, 20_002, 20_003, 50_000]) {
    const text = fitHistory(history, budget)[0].content as string;
    assert.ok(bytes([{ role: 'assistant', content: text }]) <= budget, `budget ${budget}`);
    assert.equal(text.replace(/\n\[.*\]$/, '').length % 2, 0, `budget ${budget}`);
    assert.doesNotMatch(text, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/, `budget ${budget}`);
  }
});

test('what cutting texts cannot bring within the budget goes by whole rounds, oldest first', () => {
  const call = { id: 'c1', type: 'function' as const, function: { name: 'f', arguments: JSON.stringify({ x: 'z'.repeat(200_000) }) } };
  const history: LlmMessage[] = [
    { role: 'user', content: 'first' },
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: 'c1', content: 'done' },
    { role: 'assistant', content: 'answer' },
    { role: 'user', content: 'second' },
    { role: 'assistant', content: 'second answer' },
  ];
  assert.deepEqual(fitHistory(history, 100_000), history.slice(4));
  assert.deepEqual(fitHistory(history, 10), []);
});

test('jsonBytesAtMost is never below the real JSON size', () => {
  const samples: unknown[] = [
    [], {}, '', 'plain', '\u0000\u0001"\\', 'héllo 🌍 汉字', 12345.6789e-300, -0, true, null,
    [{ role: 'user', content: [{ type: 'text', text: 'a\nb' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }],
    [{ role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'f', arguments: '{"x":"\u2028"}' } }] }],
    { nested: { deeper: [1, 'two', { three: '\ud800' }] } },
  ];
  for (const v of samples) assert.ok(jsonBytesAtMost(v) >= Buffer.byteLength(JSON.stringify(v)), JSON.stringify(v));
});
