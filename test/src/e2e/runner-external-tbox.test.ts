import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ExternalRunnerError, MAX_TBOX_RESPONSE_CHARS, runTbox, type AgentItem, type ExternalInput, type TboxConfig } from '@conveyor/agent';
import { startFakeTbox, type FakeTbox } from '../fakes/tbox-server.js';

/** tbox-app-api against a fake of Tbox's HTTP API, speaking what the Tbox SDK sends and reads. */
describe('tbox-app-api runner', () => {
  let fake: FakeTbox | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  const answer = Array.from({ length: 18 }, (_, i) => `part${i + 1}`).join(' ');
  const cfg = (url: string, extra: Partial<TboxConfig> = {}): TboxConfig => ({ baseUrl: url, apiKey: 'tbox-key', appId: 'app-1', timeoutMs: 10_000, ...extra });

  function input(stream: boolean, extra: Partial<ExternalInput> = {}) {
    const items: AgentItem[] = [];
    return { items, input: { query: 'hello there', user: 'person_u1', botId: 'bot-1', variables: {}, stream, removeThink: false, emit: async (i: AgentItem) => void items.push(i), ...extra } };
  }

  test('streams cumulative parts every 8 chunks and a final one, with the SDK\'s request and the new conversation id', async () => {
    fake = await startFakeTbox({ apiKey: 'tbox-key', appId: 'app-1', answer });
    const { items, input: i } = input(true);
    const result = await runTbox(cfg(fake.url), i);
    assert.equal(result.text, answer);
    assert.equal(result.conversationId, 'tbox-conv-1');
    const chunks = items.filter((x) => x.kind === 'chunk');
    assert.deepEqual(chunks.map((c) => [c.isFinal, c.text.trim().split(' ').length]), [[false, 8], [false, 16], [true, 18]]);
    const req = fake.requests[0];
    assert.equal(req.path, '/api/chat');
    assert.equal(req.headers.authorization, 'tbox-key', 'the key as is, without a scheme');
    assert.equal(req.headers.source, 'AGENT_SDK');
    assert.deepEqual(req.body, { appId: 'app-1', query: 'hello there', stream: true, searchEngine: false, userId: 'bot-1' });
  });

  test('the stored conversation id goes back; thinking is shown in <think> unless remove-think; non-streaming yields one message', async () => {
    fake = await startFakeTbox({ apiKey: 'tbox-key', appId: 'app-1', answer: 'the answer', thinking: 'let me see' });
    const streamed = input(true, { conversationId: 'tbox-conv-7' });
    const result = await runTbox(cfg(fake.url), streamed.input);
    assert.equal(fake.requests[0].body.conversationId, 'tbox-conv-7');
    assert.equal(result.conversationId, 'tbox-conv-7');
    assert.equal(result.text, '<think>\nlet me see\n</think>\nthe answer');
    assert.equal((await runTbox(cfg(fake.url), input(true, { removeThink: true }).input)).text, 'the answer');

    const whole = input(false);
    const r = await runTbox(cfg(fake.url), whole.input);
    assert.equal(fake.requests[2].body.stream, false);
    assert.equal(r.conversationId, 'tbox-conv-2');
    assert.deepEqual(whole.items, [{ kind: 'message', message: { role: 'assistant', content: '<think>\nlet me see\n</think>\nthe answer' } }]);
  });

  test('the user\'s images are uploaded first and sent as IMAGE files; an oversized one fails the run before the chat', async () => {
    fake = await startFakeTbox({ apiKey: 'tbox-key', appId: 'app-1', answer: 'two pictures' });
    const png = { bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]), contentType: 'image/png' };
    const jpeg = { bytes: new Uint8Array([0xff, 0xd8, 0xff, 9]), contentType: 'image/jpeg' };
    await runTbox(cfg(fake.url), input(true, { images: async () => [png, jpeg] }).input);
    assert.deepEqual(fake.uploads, [
      { fileId: 'tbox-file-1', name: 'image-1.png', type: 'image/png', bytes: 7 },
      { fileId: 'tbox-file-2', name: 'image-2.jpg', type: 'image/jpeg', bytes: 4 },
    ]);
    assert.equal(fake.requests[0].path, '/api/file/upload');
    assert.equal(fake.requests[0].headers.authorization, 'tbox-key');
    assert.deepEqual(fake.requests[2].body.files, [{ fileId: 'tbox-file-1', type: 'IMAGE' }, { fileId: 'tbox-file-2', type: 'IMAGE' }]);

    const before = fake.requests.length;
    const big = { bytes: new Uint8Array(10 * 1024 * 1024 + 1), contentType: 'image/png' };
    await assert.rejects(runTbox(cfg(fake.url), input(true, { images: async () => [big] }).input), /Tbox image 1 is larger than 10485760 bytes/);
    assert.equal(fake.requests.length, before, 'nothing was sent');
  });

  test('failures: a refused key, rate limit and server errors by status, an unknown app by its error code, a stream error event', async () => {
    fake = await startFakeTbox({ apiKey: 'tbox-key', appId: 'app-1', answer, failWith: 'model overloaded' });
    const fails = async (c: TboxConfig, re: RegExp) =>
      assert.rejects(runTbox(c, input(true).input), (err: Error) => err instanceof ExternalRunnerError && re.test(err.message) && !err.message.includes('tbox-key'));
    await fails(cfg(fake.url, { apiKey: 'wrong' }), /^Tbox answered HTTP 401: 401 invalid authorization$/);
    await fails(cfg(fake.url, { appId: 'app-x' }), /^Tbox error 10001: app app-x not found$/);
    await fails(cfg(fake.url), /^Tbox error 500: model overloaded \(request req-1\)$/);
    fake.failStatus = 429;
    await fails(cfg(fake.url), /^Tbox answered HTTP 429: 429 rate limit exceeded$/);
    fake.failStatus = 503;
    await fails(cfg(fake.url), /^Tbox answered HTTP 503: 503 internal error$/);
  });

  test('an answer beyond LangBot\'s 1 Mi characters fails, streamed or whole', async () => {
    fake = await startFakeTbox({ apiKey: 'tbox-key', appId: 'app-1', answer: 'x'.repeat(MAX_TBOX_RESPONSE_CHARS + 1) });
    for (const stream of [true, false]) {
      await assert.rejects(runTbox(cfg(fake.url), input(stream).input), (err: Error) => err instanceof ExternalRunnerError && err.message === 'Tbox response exceeds the runtime limit');
    }
  });
});
