import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { callbacksFor, finalReply, send, text } from './pipeline-support.js';

const replyText = (json: { message?: { text?: string }[] }) => (json.message ?? []).map((p) => p.text ?? '').join('');

/** Tool calls as the user sees them, through the ingress, the four services and the HTTP-bot callbacks. */
describe('tool calls in a streamed reply', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem({ pipelineConfig: { output: { misc: { 'track-function-calls': true } } } });
  });
  after(async () => {
    await sys?.stop();
  });

  test('track-function-calls shows the text before the tool round, LangBot\'s Call a.b... with the tools\' names, then the answer', async () => {
    sys.llm.script(
      { text: 'Checking.', toolCalls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }, { name: 'search', arguments: '{}' }] },
      { text: 'Sunny in Oslo.' },
    );
    const id = await send(sys, text('tools-1', 'weather?'));
    assert.equal(replyText((await finalReply(sys, id)).json), 'Sunny in Oslo.');
    const texts = callbacksFor(sys, id).map((c) => replyText(c.json));
    assert.ok(texts.includes('Checking.'), texts.join(' | '));
    assert.ok(texts.includes('Call get_weather.search...'), texts.join(' | '));
    assert.ok(texts.indexOf('Checking.') < texts.indexOf('Call get_weather.search...'));
    assert.ok(texts.indexOf('Call get_weather.search...') < texts.indexOf('Sunny in Oslo.'));
  });
});
