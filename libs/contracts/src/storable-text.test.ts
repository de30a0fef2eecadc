import { test } from 'node:test';
import assert from 'node:assert/strict';
import { storableChain, storableText } from './storable-text.js';

test('NUL is removed, lone surrogates become U+FFFD, surrogate pairs and other text are kept', () => {
  assert.equal(storableText('a\u0000b\u0000'), 'ab');
  assert.equal(storableText('x\ud800y\udc00z'), 'x\uFFFDy\uFFFDz');
  assert.equal(storableText('\udc00\ud800'), '\uFFFD\uFFFD', 'a low then a high surrogate are two lone ones');
  assert.equal(storableText('😀 \ud83d\ude00 ünï \u0001'), '😀 😀 ünï \u0001');
  assert.equal(storableText(''), '');
});

test('every string of a chain is made storable, in nested chains too, and nothing else changes', () => {
  const chain = storableChain([
    { type: 'Plain', text: 'h\u0000i' },
    { type: 'At', target: 42, display: '\ud800' },
    { type: 'Quote', id: 'q\u0000', group_id: null, sender_id: 7, target_id: null, origin: [{ type: 'Plain', text: '\u0000' }] },
    {
      type: 'Forward',
      display: { title: 't\u0000', brief: '', source: '', preview: ['p\udfff'], summary: '' },
      node_list: [{ sender_id: null, sender_name: 'n\u0000', message_chain: [{ type: 'Unknown', text: 'u\u0000' }], message_id: 3 }],
    },
  ]);
  assert.deepEqual(chain, [
    { type: 'Plain', text: 'hi' },
    { type: 'At', target: 42, display: '\uFFFD' },
    { type: 'Quote', id: 'q', group_id: null, sender_id: 7, target_id: null, origin: [{ type: 'Plain', text: '' }] },
    {
      type: 'Forward',
      display: { title: 't', brief: '', source: '', preview: ['p\uFFFD'], summary: '' },
      node_list: [{ sender_id: null, sender_name: 'n', message_chain: [{ type: 'Unknown', text: 'u' }], message_id: 3 }],
    },
  ]);
});
