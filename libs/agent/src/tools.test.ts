import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ToolCall } from '@conveyor/contracts';
import { installTestTracing } from '@conveyor/test-support';
import { ContentResult, executeToolCall, type ToolBox } from './tools.js';

const spans = installTestTracing();

const box: ToolBox = {
  definitions: () => [],
  call: async (name, args) => {
    if (name === 'weather') return { city: args.city, forecast: 'sunny canary-forecast-41' };
    if (name === 'photo') return new ContentResult([{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(4_000)}` } }]);
    throw new Error(`no tool ${name}`);
  },
};

const call = (id: string, name: string, args: string): ToolCall => ({ id, type: 'function', function: { name, arguments: args } });

function spanOf(callId: string) {
  const span = spans.getFinishedSpans().find((s) => s.attributes['gen_ai.tool.call.id'] === callId);
  assert.ok(span, `a span for tool call ${callId}`);
  return span;
}

test('a tool call is an execute_tool span by the GenAI conventions, without its arguments or result by default', async () => {
  const answer = await executeToolCall(box, call('c1', 'weather', '{"city":"Oslo"}'));
  assert.match(String(answer.content), /canary-forecast-41/);
  const span = spanOf('c1');
  assert.equal(span.name, 'execute_tool weather');
  assert.equal(span.attributes['gen_ai.operation.name'], 'execute_tool');
  assert.equal(span.attributes['gen_ai.tool.name'], 'weather');
  assert.equal(span.attributes['gen_ai.tool.type'], 'function');
  assert.ok(!JSON.stringify(span.attributes).includes('canary-forecast-41'), 'the result stays off the span');
  assert.ok(!('gen_ai.tool.call.arguments' in span.attributes));
});

test('with the content opt-in the span carries the arguments and the result; an inline image by its type only', async () => {
  await executeToolCall(box, call('c2', 'weather', '{"city":"Oslo"}'), undefined, { captureContent: true });
  const span = spanOf('c2');
  assert.equal(span.attributes['gen_ai.tool.call.arguments'], '{"city":"Oslo"}');
  assert.match(String(span.attributes['gen_ai.tool.call.result']), /canary-forecast-41/);

  await executeToolCall(box, call('c3', 'photo', '{}'), undefined, { captureContent: true });
  const result = String(spanOf('c3').attributes['gen_ai.tool.call.result']);
  assert.match(result, /data:image\/png;base64,…\(\d+ chars omitted\)/);
  assert.ok(result.length < 500, `the image's bytes stay off the span (${result.length} chars)`);
});

test('a failing tool call sets error.type and answers the model with the error', async () => {
  const answer = await executeToolCall(box, call('c4', 'missing', '{}'), undefined, { captureContent: true });
  assert.equal(answer.content, 'err: no tool missing');
  const span = spanOf('c4');
  assert.equal(span.attributes['error.type'], 'error');
  assert.equal(span.attributes['gen_ai.tool.call.result'], 'err: no tool missing');
  const bad = await executeToolCall(box, call('c5', 'weather', '{not json'));
  assert.match(String(bad.content), /^err: /);
  assert.equal(spanOf('c5').attributes['error.type'], 'bad_arguments');
});
