import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkText } from './chunk.js';

test('pieces are at most the size, overlap by the overlap, and cover the whole text', () => {
  const text = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
  const pieces = chunkText(text, 50, 10);
  assert.ok(pieces.length > 5);
  for (const p of pieces) assert.ok(Array.from(p).length <= 50, p);
  // Words stay whole: every piece is a run of the text's words.
  for (const p of pieces) assert.ok(text.includes(p), p);
  for (let i = 1; i < pieces.length; i++) {
    const lastWord = pieces[i - 1].split(' ').at(-1)!;
    assert.ok(pieces[i].includes(lastWord), `piece ${i} repeats the end of piece ${i - 1}`);
  }
  assert.ok(pieces.at(-1)!.endsWith('w199'));
});

test('a break in the second half ends a piece: paragraphs before sentences before spaces', () => {
  assert.deepEqual(chunkText('aaaa bbbb.\n\ncccc dddd', 16, 0), ['aaaa bbbb.', 'cccc dddd']);
  assert.deepEqual(chunkText('no breaks at all here', 100, 10), ['no breaks at all here']);
});

test('text without spaces is cut at the size; surrogate pairs stay whole; empty text has no pieces', () => {
  assert.deepEqual(chunkText('abcdefghij', 4, 1), ['abcd', 'defg', 'ghij']);
  assert.deepEqual(chunkText('😀😀😀😀😀', 2, 0), ['😀😀', '😀😀', '😀']);
  assert.deepEqual(chunkText('  \n ', 10, 2), []);
});

test('bad sizes are refused', () => {
  assert.throws(() => chunkText('x', 0, 0), RangeError);
  assert.throws(() => chunkText('x', 10, 10), RangeError);
});
