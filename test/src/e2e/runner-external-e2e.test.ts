import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { startFakeCoze, startFakeDashscope, startFakeDify, startFakeLangflow, startFakeN8n, type FakeExternal, type FakeKeyedExternal } from '../fakes/external-runner-apis.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';
import { replyText } from './runner-support.js';

/**
 * The external runners through the whole broker: an HTTP-bot message enters the ingress, the
 * pipeline hands the run to `dify-service-api` / `n8n-service-api` / `coze-api` / `langflow-api` /
 * `dashscope-app-api`, and the callback receiver gets
 * the external API's answer as stream parts ending with one final part.
 */
const answer = Array.from({ length: 18 }, (_, i) => `part${i + 1}`).join(' ');

async function send(sys: TestSystem, sessionId: string, text: string): Promise<ReceivedCallback[]> {
  return (await sendTracked(sys, sessionId, text)).parts;
}

async function sendTracked(sys: TestSystem, sessionId: string, text: string): Promise<{ parts: ReceivedCallback[]; messageId: string }> {
  const res = await sys.post({ session_id: sessionId, sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text }] });
  assert.equal(res.status, 202);
  const { data } = (await res.json()) as { data: { accepted_message_id: string } };
  const mine = (all: ReceivedCallback[]) => all.filter((c) => c.json?.reply_to === data.accepted_message_id);
  await sys.callbacks.waitFor((all) => mine(all).some((c) => c.json.is_final === true), 30_000)
    .catch((err: Error) => assert.fail(`${err.message}\n${sys.services.allLogs().slice(-4000)}`));
  // Late parts would show up after the final one if the stream were not closed properly.
  await new Promise((r) => setTimeout(r, 1_000));
  return { parts: mine(sys.callbacks.received).sort((a, b) => a.json.sequence - b.json.sequence), messageId: data.accepted_message_id };
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

/**
 * What every external runner must do through the whole system: stream the remote answer with exactly
 * one final part, keep the remote conversation per session (`conversationOf` reads the id the runner
 * sent from a recorded request), and turn a refused key into the pipeline's failure notice.
 */
function describeRunner(name: string, o: {
  start(): Promise<FakeKeyedExternal>;
  pipeline(fake: FakeKeyedExternal): Record<string, unknown>;
  /** The remote conversation id a request carried (Langflow's caller-chosen session id is always there). */
  conversationOf(body: any, path: string): string | undefined;
  /** The id the fake gave the first conversation. */
  firstConversation(fake: FakeKeyedExternal): string;
  queryOf(body: any): string;
  authError: RegExp;
}) {
  describe(`${name} through the broker`, () => {
    let sys: TestSystem;
    let fake: FakeKeyedExternal;

    before(async () => {
      fake = await o.start();
      sys = await startTestSystem({ pipelineConfig: { ai: { runner: { runner: name }, [name]: o.pipeline(fake) } } });
    });

    after(async () => {
      await sys?.stop();
      await fake?.close();
    });

    test('the answer streams with one final part, and the session keeps its remote conversation', async () => {
      const first = await send(sys, `${name}-session`, 'hello remote');
      assertStreamedAnswer(first, answer);
      assert.ok(first.length >= 2, `the answer arrived in several parts (${first.length})`);
      assert.equal(fake.requests.length, 1);
      assert.equal(o.queryOf(fake.requests[0].body), 'hello remote');
      const opened = o.conversationOf(fake.requests[0].body, fake.requests[0].path);
      assert.ok(opened === undefined || opened === o.firstConversation(fake), 'a new session starts a new remote conversation');
      assert.equal(sys.llm.requests.length, 0, 'the local model is not used');

      const second = await send(sys, `${name}-session`, 'and again');
      assertStreamedAnswer(second, answer);
      assert.equal(fake.requests.length, 2);
      assert.equal(o.queryOf(fake.requests[1].body), 'and again');
      assert.equal(o.conversationOf(fake.requests[1].body, fake.requests[1].path), o.firstConversation(fake), 'the remote conversation is reused');

      await send(sys, `${name}-other-session`, 'hi from elsewhere');
      assert.notEqual(o.conversationOf(fake.requests[2].body, fake.requests[2].path), o.firstConversation(fake), 'another session has its own');
    });

    test('a refused key ends the reply with the failure notice and fails the query', async () => {
      fake.apiKey = 'revoked-by-the-operator';
      const { parts, messageId } = await sendTracked(sys, `${name}-auth-session`, 'are you there');
      assert.equal(parts.filter((c) => c.json.is_final === true).length, 1, 'exactly one final part');
      assert.equal(replyText(parts.at(-1)!), 'Request failed.');
      const prisma = createPrismaClient(sys.db.url);
      try {
        const record = await waitUntil('query record failed', async () => {
          const row = await prisma.queryRecord.findFirst({ where: { launcherId: `${name}-auth-session` } });
          return row?.status === 'failed' ? row : undefined;
        });
        assert.match(String(record.error), o.authError);
        assert.ok(!String(record.error).includes('runner-secret'), 'the key is not in the error');
      } finally {
        await prisma.$disconnect();
      }
      assert.ok(sys.callbacks.received.some((c) => c.json?.reply_to === messageId && c.json.is_final === true));
    });
  });
}

describeRunner('coze-api', {
  start: () => startFakeCoze({ apiKey: 'runner-secret', answer }),
  pipeline: (f) => ({ 'api-base': f.url, 'api-key': 'runner-secret', 'bot-id': 'bot-7', timeout: 30 }),
  conversationOf: (_body, path) => new URL(path, 'http://x').searchParams.get('conversation_id') ?? undefined,
  firstConversation: () => 'coze-conv-1',
  queryOf: (body) => body.additional_messages[0].content,
  authError: /^coze-api failed: Coze answered HTTP 401/,
});

describeRunner('langflow-api', {
  start: () => startFakeLangflow({ apiKey: 'runner-secret', flowId: 'flow-1', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'flow-id': 'flow-1' }),
  // Langflow takes the caller's session id: the first request's names the conversation.
  conversationOf: (body) => body.session_id,
  firstConversation: (f) => f.requests[0].body.session_id,
  queryOf: (body) => body.input_value,
  authError: /^langflow-api failed: Langflow answered HTTP 403/,
});

describeRunner('dashscope-app-api', {
  start: () => startFakeDashscope({ apiKey: 'runner-secret', appId: 'app-1', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-id': 'app-1', 'app-type': 'agent' }),
  conversationOf: (body) => body.input.session_id,
  firstConversation: () => 'ds-session-1',
  queryOf: (body) => body.input.prompt,
  authError: /^dashscope-app-api failed: DashScope answered HTTP 401/,
});
