import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelProviderKind } from '@conveyor/contracts';
import { createPrismaClient } from '@conveyor/persistence';
import { startFakeAnthropic, startFakeGemini, startFakeOllama, type NativeModelFake } from '../fakes/index.js';
import { startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp-server.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { RunPublisher, repliesTo, replyText } from './runner-support.js';

type NativeKind = Exclude<ModelProviderKind, 'openai'>;

/**
 * Models of each native kind (Anthropic, Gemini, Ollama) in the runner process, configured as rows
 * with their `provider`: a streamed tool round (an MCP tool) whose thinking goes back to the API,
 * the answer streamed to the platform, the GenAI spans naming the provider with the call's usage,
 * fallback from a native kind to the OpenAI-compatible one, and a wrong key answered as any failed
 * model call is.
 */
describe('native model providers through the runner', () => {
  let sys: TestSystem;
  let runs: RunPublisher;
  let mcp: FakeMcpHttp;
  const fakes = {} as Record<NativeKind, NativeModelFake>;

  before(async () => {
    const [anthropic, gemini, ollama, tools] = await Promise.all([
      startFakeAnthropic({ apiKey: 'ant-e2e-key' }),
      startFakeGemini({ apiKey: 'gem-e2e-key' }),
      startFakeOllama({ models: ['qwen3:8b'] }),
      startFakeMcpHttp({ echoPrefix: 'tool' }),
    ]);
    Object.assign(fakes, { anthropic, gemini, ollama });
    mcp = tools;
    sys = await startTestSystem({ startServices: false });
    const prisma = createPrismaClient(sys.db.url);
    try {
      const row = (id: string, provider: NativeKind, baseUrl: string, modelId: string, apiKeyRef: string) =>
        prisma.llmModel.create({ data: { id, name: id, provider, baseUrl, modelId, apiKeyRef, abilities: ['func_call'] } });
      await row('claude', 'anthropic', anthropic.url, 'claude-e2e', 'env:CONVEYOR_KEY_E2E_ANT');
      await row('claude-bad-key', 'anthropic', anthropic.url, 'claude-e2e', 'env:CONVEYOR_KEY_E2E_WRONG');
      await row('gemini', 'gemini', gemini.url, 'gemini-e2e', 'env:CONVEYOR_KEY_E2E_GEM');
      await row('gemini-bad-key', 'gemini', gemini.url, 'gemini-e2e', 'env:CONVEYOR_KEY_E2E_WRONG');
      await row('ollama', 'ollama', ollama.url, 'qwen3:8b', '');
      await prisma.mcpServer.create({ data: { id: 'tools-1', name: 'tools', transport: 'http', config: { url: mcp.url } } });
    } finally {
      await prisma.$disconnect();
    }
    await Promise.all([
      sys.services.start('dispatcher'),
      sys.services.start('runner', { CONVEYOR_KEY_E2E_ANT: 'ant-e2e-key', CONVEYOR_KEY_E2E_GEM: 'gem-e2e-key', CONVEYOR_KEY_E2E_WRONG: 'not-the-key' }),
    ]);
    runs = await RunPublisher.open(sys);
  });

  after(async () => {
    await runs?.close();
    await sys?.stop();
    await Promise.all([...Object.values(fakes).map((f) => f.close()), mcp?.close()]);
  });

  const answer = 'The tool said hello, so here is a longer answer that streams in several parts to the chat.';
  const models: Record<NativeKind, { id: string; modelId: string; provider: string }> = {
    anthropic: { id: 'claude', modelId: 'claude-e2e', provider: 'anthropic' },
    gemini: { id: 'gemini', modelId: 'gemini-e2e', provider: 'gcp.gemini' },
    ollama: { id: 'ollama', modelId: 'qwen3:8b', provider: 'ollama' },
  };

  for (const kind of ['anthropic', 'gemini', 'ollama'] as const) {
    test(`${kind}: a tool round with thinking kept, the answer streamed to the platform, spans with the provider and usage`, async () => {
      const fake = fakes[kind];
      const before = fake.requests.length;
      fake.script({ thinking: 'The user wants the tool.', toolCalls: [{ name: 'echo', arguments: { text: 'hello' } }] }, { text: answer, chunkSize: 4, pieceDelayMs: 100 });
      const { id, modelId, provider } = models[kind];
      const run = await runs.publish(runs.request({
        model: { primary: id, fallbacks: [], reasoning: { [id]: 'medium' } },
        tools: { mcpServers: ['tools-1'], enableAllTools: true, tools: [] },
        messages: [{ role: 'user', content: 'call the tool' }],
      }));
      const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final === true), 30_000).then((all) => repliesTo(all, run));
      const final = replies.find((c) => c.json.is_final === true)!;
      assert.equal(replyText(final), answer);
      // Streamed: the answer reached the platform in more than one part before the final one.
      assert.ok(replies.filter((c) => replyText(c).length > 0 && replyText(c).length < answer.length).length >= 1, `parts: ${replies.map(replyText).join(' | ')}`);
      assert.equal(fake.requests.length - before, 2, 'the tool round was accepted: its thinking went back as the API checks it');
      assert.deepEqual(mcp.calls.at(-1), 'echo');
      const body = fake.requests[before].body;
      if (kind === 'anthropic') assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 4096 });
      if (kind === 'gemini') assert.deepEqual((body.generationConfig as Record<string, unknown>).thinkingConfig, { thinkingBudget: 4096, includeThoughts: true });
      if (kind === 'ollama') assert.equal(body.think, 'medium');

      const chats = await sys.otlp.waitFor((all) => all.filter((s) => s.name === `chat ${modelId}` && s.attributes['conveyor.model.id'] === id).length >= 2, 30_000)
        .then((all) => all.filter((s) => s.name === `chat ${modelId}` && s.attributes['conveyor.model.id'] === id));
      for (const chat of chats) {
        assert.equal(chat.attributes['gen_ai.provider.name'], provider);
        assert.ok(Number(chat.attributes['gen_ai.usage.input_tokens']) > 0, 'input tokens');
        assert.ok(Number(chat.attributes['gen_ai.usage.output_tokens']) > 0, 'output tokens');
        assert.ok(!JSON.stringify(chat).includes('e2e-key'), 'no key on the span');
      }
    });
  }

  test('fallback across kinds: Anthropic overloaded before its first chunk, the OpenAI-compatible model answers', async () => {
    fakes.anthropic.script({ error: { status: 529, message: 'Overloaded' } });
    sys.llm.script({ text: 'answered by the OpenAI-compatible fallback' });
    const run = await runs.publish(runs.request({ model: { primary: 'claude', fallbacks: ['fake'] } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final === true), 30_000).then((all) => repliesTo(all, run));
    assert.equal(replyText(replies.find((c) => c.json.is_final === true)!), 'answered by the OpenAI-compatible fallback');
  });

  test('fallback across kinds: Gemini after Ollama does not know the model', async () => {
    fakes.gemini.script({ text: 'Gemini took over.' });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.llmModel.create({ data: { id: 'ollama-missing', name: 'missing', provider: 'ollama', baseUrl: fakes.ollama.url, modelId: 'not-pulled', abilities: [] } });
    } finally {
      await prisma.$disconnect();
    }
    const run = await runs.publish(runs.request({ stream: false, model: { primary: 'ollama-missing', fallbacks: ['gemini'] } }));
    const replies = await sys.callbacks.waitFor((all) => repliesTo(all, run).some((c) => c.json.is_final === true), 30_000).then((all) => repliesTo(all, run));
    assert.equal(replyText(replies.find((c) => c.json.is_final === true)!), 'Gemini took over.');
  });

  for (const id of ['claude-bad-key', 'gemini-bad-key']) {
    test(`${id}: the pipeline's failure hint for the user, the provider's refusal with show-error`, async () => {
      const hinted = await runs.publish(runs.request({ model: { primary: id, fallbacks: [] } }));
      const shown = await runs.publish(runs.request({ model: { primary: id, fallbacks: [] }, exceptionHandling: 'show-error' }));
      const all = await sys.callbacks.waitFor((got) => [hinted, shown].every((r) => repliesTo(got, r).some((c) => c.json.is_final === true)), 30_000);
      assert.equal(replyText(repliesTo(all, hinted).find((c) => c.json.is_final === true)!), 'Request failed.');
      const error = replyText(repliesTo(all, shown).find((c) => c.json.is_final === true)!);
      assert.match(error, id.startsWith('claude') ? /^all 1 models failed: 401 .*authentication_error/ : /^all 1 models failed: 400 API key not valid/);
      assert.ok(!error.includes('not-the-key'), 'the key is not in the error');
      assert.ok(!sys.services.allLogs().includes('not-the-key'), 'nor in the logs');
    });
  }
});
