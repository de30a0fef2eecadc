import { test } from 'node:test';
import assert from 'node:assert/strict';
import { searchTerms, tsqueryLiteral, tsvectorLiteral, MAX_QUERY_TERMS } from './knowledge-terms.js';

test('CJK runs become characters and bigrams; a question keeps only the bigrams', () => {
  assert.deepEqual(searchTerms('退款政策'), ['退', '退款', '款', '款政', '政', '政策', '策']);
  assert.deepEqual(searchTerms('退款政策？', { forQuery: true }), ['退款', '款政', '政策']);
  assert.deepEqual(searchTerms('书', { forQuery: true }), ['书'], 'a lone character is its own term');
  assert.deepEqual(searchTerms('ひらがなカナ한국어', { forQuery: true }), ['ひら', 'らが', 'がな', 'なカ', 'カナ', 'ナ한', '한국', '국어']);
});

test('other words are lowercased, stemmed when English, and common English words dropped', () => {
  assert.deepEqual(searchTerms('What are the Refunds for Orders 2024?'), ['refund', 'order', '2024']);
  assert.deepEqual(searchTerms('Привет мир café'), ['привет', 'мир', 'café']);
  assert.deepEqual(searchTerms('ＡＢＣ１２３'), ['abc123'], 'full-width forms are folded (NFKC)');
  assert.deepEqual(searchTerms('x'.repeat(65)), [], 'a term longer than 64 characters is noise');
});

test('literals quote every term with its positions; quotes and backslashes in the text only split words', () => {
  assert.equal(tsvectorLiteral("it's a b's b"), "'s':1,3 'b':2,4");
  assert.equal(tsqueryLiteral("o'neil \\ back"), "'o' | 'neil' | 'back'");
  assert.equal(tsqueryLiteral('the of ?'), null);
  const many = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
  assert.equal(tsqueryLiteral(many)?.split(' | ').length, MAX_QUERY_TERMS);
});
