import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SequenceCounter, StreamAccumulator, type Snapshot, type StreamDelta } from './stream-accumulator.js';

function run(deltas: StreamDelta[], opts: { removeThink?: boolean; sequence?: SequenceCounter } = {}) {
  const acc = new StreamAccumulator({ removeThink: opts.removeThink ?? false, sequence: opts.sequence ?? new SequenceCounter() });
  const out: Snapshot[] = [];
  for (const d of deltas) {
    const s = acc.add(d);
    if (s) out.push(s);
  }
  const last = acc.finish();
  if (last) out.push(last);
  return { out, message: acc.message() };
}

const words = (n: number) => Array.from({ length: n }, (_, i) => ({ content: `w${i + 1} ` }));

test('cumulative snapshots every 8 deltas and on the last one', () => {
  const { out } = run([...words(20), { finishReason: 'stop' }]);
  assert.deepEqual(out.map((s) => [s.sequence, s.isFinal, s.text.trim().split(' ').length]), [
    [1, false, 8],
    [2, false, 16],
    [3, true, 20],
  ]);
  assert.equal(out[2].text, words(20).map((w) => w.content).join(''));
});

test('a final snapshot is emitted even when the provider sends no finish reason', () => {
  const { out } = run(words(16));
  assert.deepEqual(out.map((s) => [s.isFinal, s.text.length > 0]), [[false, true], [false, true], [true, true]]);
  assert.equal(out.at(-1)!.text, words(16).map((w) => w.content).join(''));
  // And for a stream without any delta: one empty final part, so the reply still ends.
  assert.deepEqual(run([]).out.map((s) => [s.isFinal, s.text]), [[true, '']]);
});

test('tool-call deltas merge by index; a missing id becomes LangBot\'s call_<index>; calls only on the final snapshot', () => {
  const { out, message } = run([
    { toolCalls: [{ index: 0, id: 'call_a', name: 'weather', arguments: '' }] },
    { toolCalls: [{ index: 0, arguments: '{"city":' }] },
    { toolCalls: [{ index: 1, name: 'time', arguments: '{"tz"' }] },
    { toolCalls: [{ index: 0, arguments: '"Oslo"}' }] },
    { toolCalls: [{ index: 1, arguments: ':"UTC"}' }] },
    { finishReason: 'tool_calls' },
  ]);
  assert.equal(out.length, 1);
  assert.equal(out[0].isFinal, true);
  assert.deepEqual(out[0].toolCalls, [
    { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
    { id: 'call_1', type: 'function', function: { name: 'time', arguments: '{"tz":"UTC"}' } },
  ]);
  assert.deepEqual(message, { role: 'assistant', content: null, tool_calls: out[0].toolCalls });
});

test('two calls sent under one index with different ids stay two calls', () => {
  const { message } = run([
    { toolCalls: [{ index: 0, id: 'a', name: 'f', arguments: '{}' }] },
    { toolCalls: [{ index: 0, id: 'b', name: 'g', arguments: '{"x":1}' }] },
    { finishReason: 'tool_calls' },
  ]);
  assert.deepEqual(message.tool_calls!.map((c) => [c.id, c.function.name, c.function.arguments]), [['a', 'f', '{}'], ['b', 'g', '{"x":1}']]);
});

test('sequence numbers keep increasing across rounds that share a counter', () => {
  const sequence = new SequenceCounter();
  const a = run([...words(9), { finishReason: 'tool_calls', toolCalls: [{ index: 0, id: 'x', name: 'f', arguments: '{}' }] }], { sequence }).out;
  const b = run([...words(3), { finishReason: 'stop' }], { sequence }).out;
  assert.deepEqual([...a, ...b].map((s) => s.sequence), [1, 2, 3]);
  assert.equal(b[0].text, 'w1 w2 w3 ', 'a later round starts from empty text');
});

test('remove-think strips think blocks split across deltas', () => {
  const deltas = ['<thi', 'nk>plan', 'ning…</th', 'ink>\n\nThe ', 'answer <', 'b>'].map((content) => ({ content }));
  assert.equal(run(deltas, { removeThink: true }).out.at(-1)!.text, 'The answer <b>');
  assert.equal(run(deltas).out.at(-1)!.text, '<think>planning…</think>\n\nThe answer <b>');
});

test('remove-think: a stray </think> at the start hides everything before it, in every snapshot (LangBot)', () => {
  const reasoning = Array.from({ length: 12 }, (_, i) => ({ content: `thought${i} ` }));
  const { out, message } = run([...reasoning, { content: 'still hidden</thi' }, { content: 'nk>Here is the answer.' }, { finishReason: 'stop' }], { removeThink: true });
  assert.deepEqual(out.map((s) => [s.text, s.isFinal]), [['Here is the answer.', true]]);
  assert.equal(message.content, 'Here is the answer.');
});

test('remove-think keeps the whitespace around a removed block as LangBot does', () => {
  const { out } = run(['Use <thi', 'nk>x</think> as an', ' XML-like example.\n'].map((content) => ({ content })), { removeThink: true });
  assert.equal(out.at(-1)!.text, 'Use  as an XML-like example.');
});

test('a separate reasoning field is wrapped in think tags, or dropped with remove-think', () => {
  const deltas: StreamDelta[] = [{ reasoning: 'let me ' }, { reasoning: 'see' }, { content: 'Yes.' }, { finishReason: 'stop' }];
  assert.equal(run(deltas).out.at(-1)!.text, '<think>\nlet me see\n</think>\nYes.');
  assert.equal(run(deltas, { removeThink: true }).out.at(-1)!.text, 'Yes.');
});

test('intermediate snapshots whose text did not change are not emitted', () => {
  const calls = Array.from({ length: 16 }, (_, i) => ({ toolCalls: [{ index: 0, ...(i === 0 ? { id: 'c', name: 'f' } : {}), arguments: 'x' }] }));
  const { out } = run([{ content: 'Let me check.' }, ...calls, { finishReason: 'tool_calls' }]);
  assert.deepEqual(out.map((s) => [s.text, s.isFinal]), [['Let me check.', false], ['Let me check.', true]]);
});

test('a synthesized id is the call\'s delta index, not its position', () => {
  const { message } = run([
    { toolCalls: [{ index: 2, name: 'f', arguments: '{}' }] },
    { toolCalls: [{ index: 5, name: 'g', arguments: '{}' }] },
    { finishReason: 'tool_calls' },
  ]);
  assert.deepEqual(message.tool_calls!.map((c) => [c.id, c.function.name]), [['call_2', 'f'], ['call_5', 'g']]);
});

test('reasoning blocks are kept on the round message for the next request, not shown, and not counted as deltas', () => {
  const deltas: StreamDelta[] = [
    { reasoning: 'plan' },
    { blocks: [{ type: 'thinking', thinking: 'plan', signature: 'sig' }] },
    { toolCalls: [{ index: 1, id: 'toolu_1', name: 'weather', arguments: '{}' }] },
    { finishReason: 'tool_calls', blocks: [{ type: 'thought_signature', signature: 'g', tool_call_id: 'toolu_1' }] },
  ];
  const { out, message } = run(deltas);
  assert.equal(out.at(-1)!.text, '<think>\nplan\n</think>\n');
  assert.deepEqual(message.reasoning_blocks, [{ type: 'thinking', thinking: 'plan', signature: 'sig' }, { type: 'thought_signature', signature: 'g', tool_call_id: 'toolu_1' }]);
  assert.equal(run([{ content: 'plain' }, { finishReason: 'stop' }]).message.reasoning_blocks, undefined);
});
