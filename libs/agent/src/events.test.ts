import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunnerEvent, type RunnerEventBody } from '@conveyor/contracts';
import { FinalAnswerHold, isFinalAnswer, MAX_EVENT_TOOL_CONTENT, toEventBody } from './events.js';

const base = { v: 1, queryId: '00000000-0000-4000-8000-000000000000', route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'r' }, attempt: 1, seq: 0 } as const;

test('a chunk that ends a round with tool calls carries the tools\' names, for ResponseWrapper\'s Call a.b...', () => {
  const body = toEventBody({ kind: 'chunk', text: 'Checking.', isFinal: true, hasToolCalls: true, toolNames: ['get_weather', 'search'], sequence: 3 });
  assert.deepEqual(body, { kind: 'chunk', text: 'Checking.', isFinal: true, hasToolCalls: true, toolNames: ['get_weather', 'search'] });
  // And the event is valid on the bus, names included.
  const event = RunnerEvent.parse({ ...base, ...body });
  assert.equal(event.kind === 'chunk' && event.toolNames?.join('.'), 'get_weather.search');
});

test('a chunk without tool calls carries no names; tool results are cut for observers', () => {
  assert.deepEqual(toEventBody({ kind: 'chunk', text: 'Hi', isFinal: false, hasToolCalls: false, toolNames: [], sequence: 1 }), { kind: 'chunk', text: 'Hi', isFinal: false, hasToolCalls: false });
  const body = toEventBody({ kind: 'tool_result', toolCallId: 'call_0', name: 'f', content: 'x'.repeat(MAX_EVENT_TOOL_CONTENT + 10) });
  assert.equal(body.kind === 'tool_result' && body.content.length, MAX_EVENT_TOOL_CONTENT);
});

test('the answer is held until the run ends and then goes out as its last event; anything after it releases it first', async () => {
  const sent: RunnerEventBody[] = [];
  const hold = new FinalAnswerHold(async (body) => void sent.push(body));
  await hold.item({ kind: 'chunk', text: 'Check', isFinal: false, hasToolCalls: false });
  await hold.item({ kind: 'chunk', text: 'Checking.', isFinal: true, hasToolCalls: true, toolNames: ['f'] });
  await hold.item({ kind: 'tool_result', toolCallId: 'c', name: 'f', content: '1' });
  await hold.item({ kind: 'chunk', text: 'It is 1.', isFinal: true, hasToolCalls: false });
  assert.deepEqual(sent.map((b) => b.kind === 'chunk' && b.text), ['Check', 'Checking.', false], 'the answer waits; a round that calls tools does not');
  const answer = hold.take();
  assert.deepEqual(answer, { kind: 'chunk', text: 'It is 1.', isFinal: true, hasToolCalls: false });
  assert.equal(RunnerEvent.parse({ ...base, ...answer, last: true }).last, true, 'valid on the bus as the last event');
  assert.equal(hold.take(), null, 'taken once');

  const early = new FinalAnswerHold(async (body) => void sent.push(body));
  sent.length = 0;
  await early.item({ kind: 'message', message: { role: 'assistant', content: 'first' } });
  await early.item({ kind: 'message', message: { role: 'assistant', content: 'second' } });
  assert.deepEqual(sent, [{ kind: 'message', message: { role: 'assistant', content: 'first' } }], 'a later item releases the held one, in order');
  assert.equal(isFinalAnswer({ kind: 'message', message: { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] } }), false);
});
