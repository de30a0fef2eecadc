import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pyStrip, stripThink, ThinkStripper, withReasoning } from './think.js';

/** Cases from LangBot's tests (tests/unit_tests/provider/test_litellmchat.py, TestProcessThinkingContent). */
test('stripThink keeps the whitespace around a removed block as LangBot does, then strips the whole text', () => {
  assert.equal(stripThink('Hello world'), 'Hello world');
  assert.equal(stripThink('<think>Let me think...</think> The answer is 42.'), 'The answer is 42.');
  assert.equal(stripThink('Use <think>example</think> in the document.'), 'Use  in the document.');
  assert.equal(stripThink('<think>hidden</think> Keep <think>example</think>.'), 'Keep .');
  assert.equal(stripThink(''), '');
});

test('stripThink: a stray </think> hides everything before it; an unclosed block stays (LangBot)', () => {
  assert.equal(stripThink('hidden reasoning</think> Visible answer.'), 'Visible answer.');
  assert.equal(stripThink('Hi <think>never closed'), 'Hi <think>never closed');
});

test('withReasoning shows a separate reasoning field unless remove-think is on', () => {
  assert.equal(withReasoning('The answer is 42.', 'Let me think...', false), '<think>\nLet me think...\n</think>\nThe answer is 42.');
  assert.equal(withReasoning('The answer is 42.', 'Let me think...', true), 'The answer is 42.');
  assert.equal(withReasoning('<think>hmm</think>Yes', undefined, true), 'Yes');
});

const stream = (deltas: string[]) => {
  const s = new ThinkStripper();
  return deltas.map((d) => s.push(d)).join('') + s.flush();
};

/** Cases from LangBot's tests of the streaming requester (test_stream_removes_*). */
test('ThinkStripper: a leading block split across deltas, a stray </think> at the start, a block in the body', () => {
  assert.equal(stream(['<thi', 'nk>hidden', ' reasoning</thi', 'nk>Visible answer']), 'Visible answer');
  assert.equal(stream(['hidden reasoning', ' still hidden</thi', 'nk>Visible answer']), 'Visible answer');
  assert.equal(stream(['Use <think>x</think> as an XML-like example.']), 'Use  as an XML-like example.');
});

test('ThinkStripper lets nothing through until the answer shows something: a </think> may still come', () => {
  const s = new ThinkStripper();
  assert.equal(s.push('hidden reasoning'), '');
  assert.equal(s.push(' more'), '');
  assert.equal(s.push('</think>Answer'), 'Answer');
  assert.equal(s.push(' goes on'), ' goes on');
  const plain = new ThinkStripper();
  assert.equal(plain.push('No tags at all'), '');
  assert.equal(plain.flush(), 'No tags at all');
  const shown = new ThinkStripper();
  assert.equal(shown.push('Visible <think>x</think> then'), 'Visible  then');
  assert.equal(shown.push(' more </think> kept'), ' more </think> kept', 'once the answer showed, a stray </think> is text');
});

test('ThinkStripper gives the same text for any split of the deltas', () => {
  for (const text of ['A<think>x</think>  B <think>y\n</think>C <thin', 'reasoning</think>\n\nThe answer', '<think>never closed', 'plain text <b>']) {
    const whole = stream([text]);
    for (let cut = 1; cut < text.length; cut++) assert.equal(stream([text.slice(0, cut), text.slice(cut)]), whole, `${JSON.stringify(text)} split at ${cut}`);
  }
  assert.equal(stream(['A<think>x</think>  B <think>y\n</think>C <thin']), 'A  B C <thin');
  assert.equal(stream(['<think>never closed']), '');
});

test('pyStrip strips what Python\'s str.strip() strips', () => {
  assert.equal(pyStrip(' \t\n\x1c\x85\u3000 text \u2028\x1f'), 'text');
  assert.equal(pyStrip('\ufefftext'), '\ufefftext');
});
