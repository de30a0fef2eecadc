import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stripThink, ThinkStripper, withReasoning } from './think.js';

test('stripThink removes every block and an unclosed trailing one', () => {
  assert.equal(stripThink('<think>a</think>\nHello <think>b</think> world'), 'Hello world');
  assert.equal(stripThink('Hi <think>never closed'), 'Hi ');
});

test('ThinkStripper matches stripThink for any split of the text', () => {
  const text = 'A<think>x</think>  B <think>y\n</think>C <thin';
  for (let cut = 1; cut < text.length; cut++) {
    const s = new ThinkStripper();
    const out = s.push(text.slice(0, cut)) + s.push(text.slice(cut)) + s.flush();
    assert.equal(out, 'AB C <thin', `split at ${cut}`);
  }
});

test('withReasoning shows a separate reasoning field unless remove-think is on', () => {
  assert.equal(withReasoning('Yes', 'hmm', false), '<think>\nhmm\n</think>\nYes');
  assert.equal(withReasoning('<think>hmm</think>Yes', undefined, true), 'Yes');
});
