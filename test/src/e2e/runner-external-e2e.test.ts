import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeDify, startFakeN8n, type FakeExternal } from '../fakes/external-runner-apis.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';
import { replyText } from './runner-support.js';

/**
 * The external runners through the whole broker: an HTTP-bot message enters the ingress, the
 * pipeline hands the run to `dify-service-api` / `n8n-service-api`, and the callback receiver gets
 * the external API's answer as stream parts ending with one final part.
 */
const answer = Array.from({ length: 18 }, (_, i) => `part${i + 1}`).join(' ');

async function send(sys: TestSystem, sessionId: string, text: string): Promise<ReceivedCallback[]> {
  const res = await sys.post({ session_id: sessionId, sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text }] });
  assert.equal(res.status, 202);
  const { data } = (await res.json()) as { data: { accepted_message_id: string } };
  const mine = (all: ReceivedCallback[]) => all.filter((c) => c.json?.reply_to === data.accepted_message_id);
  await sys.callbacks.waitFor((all) => mine(all).some((c) => c.json.is_final === true), 30_000)
    .catch((err: Error) => assert.fail(`${err.message}\n${sys.services.allLogs().slice(-4000)}`));
  // Late parts would show up after the final one if the stream were not closed properly.
  await new Promise((r) => setTimeout(r, 1_000));
  return mine(sys.callbacks.received).sort((a, b) => a.json.sequence - b.json.sequence);
}

function assertStreamedAnswer(parts: ReceivedCallback[], expected: string): void {
  assert.ok(parts.length >= 1);
  assert.ok(parts.every((c) => c.json.stream === true && c.signatureValid), 'signed stream parts');
  assert.equal(parts.filter((c) => c.json.is_final === true).length, 1, 'exactly one final part');
  assert.equal(parts.at(-1)!.json.is_final, true, 'the final part is the last one');
  assert.equal(replyText(parts.at(-1)!), expected);
  // Cumulative snapshots: every part is a prefix of the answer.
  for (const p of parts) assert.ok(expected.startsWith(replyText(p)), `part is a prefix: ${replyText(p)}`);
}

describe('dify-service-api through the broker', () => {
  let sys: TestSystem;
  let dify: FakeExternal;

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

    const second = await send(sys, 'dify-session', 'and again');
    assertStreamedAnswer(second, answer);
    assert.equal(dify.requests.length, 2);
    assert.equal(dify.requests[1].body.query, 'and again');
    assert.equal(dify.requests[1].body.conversation_id, 'dify-conv-e2e', 'the Dify conversation id is reused');

    // Another session does not share it.
    await send(sys, 'dify-other-session', 'hi from elsewhere');
    assert.equal(dify.requests[2].body.conversation_id, '');
  });
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
