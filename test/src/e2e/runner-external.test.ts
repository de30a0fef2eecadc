import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runDify, runN8n, type AgentItem, type ExternalInput } from '@conveyor/agent';
import { startFakeDify, startFakeN8n, type FakeExternal } from '../fakes/external-runner-apis.js';

/** dify-service-api and n8n-service-api against fakes of their HTTP APIs. */
describe('external runners', () => {
  let fake: FakeExternal | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  const answer = Array.from({ length: 18 }, (_, i) => `part${i + 1}`).join(' ');

  function input(stream: boolean, extra: Partial<ExternalInput> = {}) {
    const items: AgentItem[] = [];
    return { items, input: { query: 'hello there', user: 'person_u1', variables: { launcher_id: 'u1' }, stream, removeThink: false, emit: async (i: AgentItem) => void items.push(i), ...extra } };
  }
  const dify = (url: string, appType: 'chat' | 'workflow' = 'chat') => ({ baseUrl: url, appType, apiKey: 'app-key', basePrompt: 'describe the file', timeoutMs: 10_000 });

  test('Dify chat streams cumulative parts every 8 deltas, ends with a final one, and returns the conversation id', async () => {
    fake = await startFakeDify({ apiKey: 'app-key', answer, conversationId: 'conv-9' });
    const { items, input: i } = input(true);
    const result = await runDify(dify(fake.url), i);
    assert.equal(result.text, answer);
    assert.equal(result.conversationId, 'conv-9');
    const chunks = items.filter((x) => x.kind === 'chunk');
    assert.deepEqual(chunks.map((c) => [c.isFinal, c.text.trim().split(' ').length]), [[false, 8], [false, 16], [true, 18]]);
    const req = fake.requests[0];
    assert.equal(req.path, '/v1/chat-messages');
    assert.deepEqual({ ...req.body, inputs: undefined }, { query: 'hello there', user: 'person_u1', response_mode: 'streaming', conversation_id: '', files: [], inputs: undefined });
  });

  test('Dify: the stored conversation id is sent back; non-streaming yields one message; an error event fails the run', async () => {
    fake = await startFakeDify({ apiKey: 'app-key', answer: 'short answer' });
    const { items, input: i } = input(false, { conversationId: 'conv-1' });
    await runDify(dify(fake.url), i);
    assert.equal(fake.requests[0].body.conversation_id, 'conv-1');
    assert.deepEqual(items, [{ kind: 'message', message: { role: 'assistant', content: 'short answer' } }]);
    await fake.close();
    fake = await startFakeDify({ apiKey: 'app-key', answer: 'half', failWith: 'quota exceeded' });
    await assert.rejects(runDify(dify(fake.url), input(true).input), /quota exceeded/);
    await assert.rejects(runDify({ ...dify(fake.url), apiKey: 'wrong' }, input(true).input), /HTTP 401/);
  });

  test('Dify workflow: text_chunk deltas, the summary output is the final answer', async () => {
    fake = await startFakeDify({ apiKey: 'app-key', answer: 'workflow says hi' });
    const { items, input: i } = input(true);
    const result = await runDify(dify(fake.url, 'workflow'), i);
    assert.equal(fake.requests[0].path, '/v1/workflows/run');
    assert.equal(result.text, 'workflow says hi');
    assert.equal((items.at(-1) as { isFinal: boolean }).isFinal, true);
  });

  test('n8n streaming: objects split across writes are parsed; parts every 8 items, then the final one', async () => {
    fake = await startFakeN8n({ answer, streaming: true, header: ['X-Api-Key', 'secret'] });
    const { items, input: i } = input(true);
    const result = await runN8n({ webhookUrl: fake.url, authType: 'header', headerName: 'X-Api-Key', headerValue: 'secret', timeoutMs: 10_000, outputKey: 'response' }, i);
    assert.equal(result.text, answer);
    assert.deepEqual(items.filter((x) => x.kind === 'chunk').map((c) => c.isFinal), [false, false, true]);
    const body = fake.requests[0].body;
    assert.equal(body.chatInput, 'hello there');
    assert.equal(body.session_id, result.conversationId);
    assert.equal(body.user_id, 'person_u1');
  });

  test('n8n plain JSON: the output-key field is the answer; JWT auth sends a bearer token', async () => {
    fake = await startFakeN8n({ answer: 'plain answer', streaming: false });
    const { items, input: i } = input(true);
    const result = await runN8n({ webhookUrl: fake.url, authType: 'jwt', jwtSecret: 's3cret', timeoutMs: 10_000, outputKey: 'response' }, i);
    assert.equal(result.text, 'plain answer');
    assert.deepEqual(items.map((x) => x.kind === 'chunk' && [x.text, x.isFinal]), [['plain answer', true]]);
    assert.match(String(fake.requests[0].headers.authorization), /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
  });
});
