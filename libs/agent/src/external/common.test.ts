import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentItem } from '../agent-loop.js';
import { ExternalReply, externalVisibleText } from './common.js';

async function replay(pieces: string[], removeThink: boolean) {
  const items: AgentItem[] = [];
  const reply = new ExternalReply({ query: 'q', user: 'person_u', variables: {}, stream: true, removeThink, emit: async (i) => void items.push(i) });
  for (const p of pieces) await reply.delta(p);
  const text = await reply.finish();
  return { text, chunks: items.flatMap((i) => (i.kind === 'chunk' ? [i.text] : [])) };
}

test('remove-think on an external runner judges each snapshot as LangBot\'s Dify runner: the answer streams as it comes', async () => {
  const words = Array.from({ length: 16 }, (_, i) => `w${i} `);
  const { chunks, text } = await replay(words, true);
  assert.deepEqual(chunks, [words.slice(0, 8).join(''), words.join(''), words.join('')], 'nothing held back');
  assert.equal(text, words.join(''));
  const thinking = await replay(['<think>pl', 'an</think>', '\nHello'], true);
  assert.equal(thinking.text, 'Hello');
});

test('externalVisibleText: an unclosed block hides the rest, closed blocks go and the text is stripped', () => {
  assert.equal(externalVisibleText('Hi <think>plan'), 'Hi');
  assert.equal(externalVisibleText('<think>plan</think>\nHello!'), 'Hello!');
  assert.equal(externalVisibleText('Use <think>x</think> as is '), 'Use  as is');
  assert.equal(externalVisibleText('no tags '), 'no tags ');
});

test('remove-think off shows the external runner\'s text as it is', async () => {
  const { text } = await replay(['<think>plan</think>', 'Hello'], false);
  assert.equal(text, '<think>plan</think>Hello');
});
