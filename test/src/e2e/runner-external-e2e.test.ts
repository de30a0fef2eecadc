import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addHttpBotPipeline, type TestSystem } from '../harness/system.js';
import { startFakeCoze, startFakeDashscope, startFakeDeerflow, startFakeDify, startFakeLangflow, startFakeN8n, startFakeWeknora, fakeUsage, type FakeExternal, type FakeKeyedExternal } from '../fakes/external-runner-apis.js';
import { startFakeTbox, type FakeTbox } from '../fakes/tbox-server.js';
import { tinyPng } from '../fakes/image-host.js';
import { answer, assertRecordedTokens, assertRefusedKeyFails, assertStreamedAnswer, describeOnOneSystem, describeRunner, send } from './external-runner-e2e-support.js';
import { replyText } from './runner-support.js';

/**
 * The external runners through the whole broker: an HTTP-bot message enters the ingress, the
 * pipeline hands the run to the runner it names (`dify-service-api`, `n8n-service-api`, `coze-api`,
 * ...), and the callback receiver gets the external API's answer as stream parts ending with one
 * final part. One system serves them all, each runner on a bot and pipeline of its own.
 */
describeOnOneSystem('external runners through the broker', (system) => {
  describe('dify-service-api through the broker', () => {
    let sys: TestSystem;
    let dify: FakeKeyedExternal;

    before(async () => {
      dify = await startFakeDify({ apiKey: 'dify-app-key', answer, conversationId: 'dify-conv-e2e' });
      sys = await addHttpBotPipeline(system(), { ai: { runner: { runner: 'dify-service-api' }, 'dify-service-api': { 'base-url': dify.url, 'app-type': 'chat', 'api-key': 'dify-app-key' } } });
    });

    after(async () => {
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
      sys = await addHttpBotPipeline(system(), {
        ai: { runner: { runner: 'n8n-service-api' }, 'n8n-service-api': { 'webhook-url': n8n.url, 'auth-type': 'header', 'header-name': 'X-Api-Key', 'header-value': 'n8n-secret', timeout: 30 } },
      });
    });

    after(async () => {
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

  /** `coze-api` through the whole system against a fake of its HTTP API (see describeRunner). */
  describeRunner(system, 'coze-api', {
    start: () => startFakeCoze({ apiKey: 'runner-secret', answer }),
    pipeline: (f) => ({ 'api-base': f.url, 'api-key': 'runner-secret', 'bot-id': 'bot-7', timeout: 30 }),
    conversationOf: (_body, path) => new URL(path, 'http://x').searchParams.get('conversation_id') ?? undefined,
    firstConversation: () => 'coze-conv-1',
    queryOf: (body) => body.additional_messages[0].content,
    authError: /^coze-api failed: Coze answered HTTP 401/,
  });

  /** `dashscope-app-api` through the whole system against a fake of its HTTP API (see describeRunner). */
  describeRunner(system, 'dashscope-app-api', {
    start: () => startFakeDashscope({ apiKey: 'runner-secret', appId: 'app-1', answer }),
    pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-id': 'app-1', 'app-type': 'agent' }),
    conversationOf: (body) => body.input.session_id,
    firstConversation: () => 'ds-session-1',
    queryOf: (body) => body.input.prompt,
    authError: /^dashscope-app-api failed: DashScope answered HTTP 401/,
  });

  /** `deerflow-api` through the whole system against a fake of its LangGraph API (see describeRunner). */
  describeRunner(system, 'deerflow-api', {
    start: () => startFakeDeerflow({ apiKey: 'runner-secret', answer }),
    pipeline: (f) => ({ 'api-base': f.url, 'api-key': 'runner-secret' }),
    // The thread is in the path: the runner opens one for a new conversation first.
    conversationOf: (_body, path) => /\/threads\/([^/]+)\/runs\/stream$/.exec(path)?.[1],
    firstConversation: () => 'df-thread-1',
    queryOf: (body) => body.input.messages.at(-1).content,
    authError: /^deerflow-api failed: DeerFlow answered HTTP 401/,
  });

  /** `langflow-api` through the whole system against a fake of its HTTP API (see describeRunner). */
  describeRunner(system, 'langflow-api', {
    start: () => startFakeLangflow({ apiKey: 'runner-secret', flowId: 'flow-1', answer }),
    pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'flow-id': 'flow-1' }),
    // Langflow takes the caller's session id: the first request's names the conversation.
    conversationOf: (body) => body.session_id,
    firstConversation: (f) => f.requests[0].body.session_id,
    queryOf: (body) => body.input_value,
    authError: /^langflow-api failed: Langflow answered HTTP 403/,
  });

  /** `tbox-app-api` through the whole system against a fake of its HTTP API (see describeRunner). */
  describeRunner(system, 'tbox-app-api', {
    start: () => startFakeTbox({ apiKey: 'runner-secret', appId: 'app-1', answer }),
    pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-id': 'app-1' }),
    conversationOf: (body) => body.conversationId,
    firstConversation: () => 'tbox-conv-1',
    queryOf: (body) => body.query,
    authError: /^tbox-app-api failed: Tbox answered HTTP 401: 401 invalid authorization/,
    moreTests(ctx) {
      test('a picture of the user\'s message is uploaded to Tbox first and the chat names it as an IMAGE file', async () => {
        const { sys } = ctx();
        const fake = ctx().fake as FakeTbox;
        const png = tinyPng();
        const res = await sys.post({ session_id: 'tbox-image-session', sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text: 'what is this' }, { type: 'Image', base64: `data:image/png;base64,${png.toString('base64')}` }] });
        assert.equal(res.status, 202);
        const { data } = (await res.json()) as { data: { accepted_message_id: string } };
        const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id && c.json?.is_final === true), 30_000);
        assert.equal(replyText(all.find((c) => c.json?.reply_to === data.accepted_message_id && c.json?.is_final === true)!), answer);
        const upload = fake.uploads.at(-1)!;
        assert.deepEqual({ type: upload.type, bytes: upload.bytes }, { type: 'image/png', bytes: png.length });
        const chat = fake.requests.filter((r) => r.path === '/api/chat').at(-1)!;
        assert.equal(chat.body.query, 'what is this');
        assert.deepEqual(chat.body.files, [{ fileId: upload.fileId, type: 'IMAGE' }]);
      });
    },
  });

  /** `weknora-api` through the whole system against a fake of its HTTP API (see describeRunner). */
  describeRunner(system, 'weknora-api', {
    start: () => startFakeWeknora({ apiKey: 'runner-secret', answer }),
    pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-type': 'agent' }),
    // The WeKnora session is in the path: the runner opens one for a new conversation first.
    conversationOf: (_body, path) => /\/agent-chat\/([^/?]+)$/.exec(path)?.[1],
    firstConversation: () => 'wk-session-1',
    queryOf: (body) => body.query,
    authError: /^weknora-api failed: WeKnora answered HTTP 401/,
  });
});
