import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeDify, startFakeN8n, type FakeExternal, type FakeKeyedExternal } from '../fakes/external-runner-apis.js';
import { fakeUsage } from '../fakes/external-runner-apis.js';
import { answer, assertRecordedTokens, assertRefusedKeyFails, assertStreamedAnswer, send } from './external-runner-e2e-support.js';

/**
 * The external runners through the whole broker: an HTTP-bot message enters the ingress, the
 * pipeline hands the run to `dify-service-api` / `n8n-service-api`, and the callback receiver gets
 * the external API's answer as stream parts ending with one final part. Coze, Langflow and DashScope
 * have a file each (runner-external-<name>-e2e), each within the per-file time limit.
 */
describe('dify-service-api through the broker', () => {
  let sys: TestSystem;
  let dify: FakeKeyedExternal;

  before(async () => {
    dify = await startFakeDify({ apiKey: 'dify-app-key', answer, conversationId: 'dify-conv-e2e' });
    sys = await startTestSystem({
      pipelineConfig: { ai: { runner: { runner: 'dify-service-api' }, 'dify-service-api': { 'base-url': dify.url, 'app-type': 'chat', 'api-key': 'dify-app-key' } } },
    });
  });

  after(async () => {
    await sys?.stop();
    await dify?.close();
  });

  test('the user gets the Dify answer streamed, and the next message of the session reuses the Dify conversation', async () => {
    const first = await send(sys, 'dify-session', 'hello dify');
    assertStreamedAnswer(first, answer);
    assert.ok(first.length >= 2, `the answer arrived in several parts (${first.length})`);
    assert.equal(dify.requests.length, 1);
    assert.equal(dify.requests[0].path, '/v1/chat-messages');
    assert.equal(dify.requests[0].body.query, 'hello dify');
    assert.equal(dify.requests[0].body.conversation_id, '', 'a new session starts a new Dify conversation');
    assert.equal(sys.llm.requests.length, 0, 'the local model is not used');
    // The tokens of Dify's message_end usage are on the query record, for the monitoring.
    const usage = fakeUsage('hello dify', answer);
    await assertRecordedTokens(sys, 'dify-session', { inputTokens: usage.input, outputTokens: usage.output });

    const second = await send(sys, 'dify-session', 'and again');
    assertStreamedAnswer(second, answer);
    assert.equal(dify.requests.length, 2);
    assert.equal(dify.requests[1].body.query, 'and again');
    assert.equal(dify.requests[1].body.conversation_id, 'dify-conv-e2e', 'the Dify conversation id is reused');

    // Another session does not share it.
    await send(sys, 'dify-other-session', 'hi from elsewhere');
    assert.equal(dify.requests[2].body.conversation_id, '');
  });

  test('a refused key ends the reply with the failure notice and fails the query', () =>
    assertRefusedKeyFails(sys, dify, 'dify-auth-session', /^dify-service-api failed: Dify answered HTTP 401/));
});

describe('n8n-service-api through the broker', () => {
  let sys: TestSystem;
  let n8n: FakeExternal;

  before(async () => {
    n8n = await startFakeN8n({ answer, streaming: true, header: ['X-Api-Key', 'n8n-secret'] });
    sys = await startTestSystem({
      pipelineConfig: {
        ai: { runner: { runner: 'n8n-service-api' }, 'n8n-service-api': { 'webhook-url': n8n.url, 'auth-type': 'header', 'header-name': 'X-Api-Key', 'header-value': 'n8n-secret', timeout: 30 } },
      },
    });
  });

  after(async () => {
    await sys?.stop();
    await n8n?.close();
  });

  test('the user gets the n8n webhook answer streamed, ending with one final part', async () => {
    const parts = await send(sys, 'n8n-session', 'hello n8n');
    assertStreamedAnswer(parts, answer);
    assert.ok(parts.length >= 2, `the answer arrived in several parts (${parts.length})`);
    assert.equal(n8n.requests.length, 1);
    assert.equal(n8n.requests[0].body.chatInput, 'hello n8n');
    assert.equal(n8n.requests[0].headers['x-api-key'], 'n8n-secret');
    assert.equal(sys.llm.requests.length, 0, 'the local model is not used');
  });
});
