import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunnerEvent } from '@conveyor/contracts';
import { MAX_EVENT_TOOL_CONTENT, toEventBody } from './events.js';

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
