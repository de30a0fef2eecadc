import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitUtf8 } from './adapter.js';

test('a text within the limit is one piece; an empty text none', () => {
  assert.deepEqual(splitUtf8('hello'), ['hello']);
  assert.deepEqual(splitUtf8(''), []);
});

test('pieces stay within the byte limit, never split a character, prefer a line end, and join back to the text', () => {
  const text = `${'中'.repeat(600)}\n${'文'.repeat(700)}😀${'a'.repeat(3000)}`;
  const parts = splitUtf8(text, 2048);
  assert.equal(parts.join(''), text);
  for (const p of parts) assert.ok(Buffer.byteLength(p) <= 2048);
  assert.ok(parts[0]!.endsWith('\n'), 'the first piece ends after the line');
  assert.ok(!parts.some((p) => p.includes('\uFFFD')));
  const emoji = splitUtf8('😀'.repeat(10), 6);
  assert.deepEqual(emoji, Array(10).fill('😀'));
});

test('past the part bound the last piece is cut and says so', () => {
  const parts = splitUtf8('x'.repeat(10_000), 100, 3);
  assert.equal(parts.length, 3);
  assert.ok(parts[2]!.endsWith('… (truncated)'));
  for (const p of parts) assert.ok(Buffer.byteLength(p) <= 100);
});
