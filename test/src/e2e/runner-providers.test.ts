import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ModelProviderKind, RunRequest } from '@conveyor/contracts';
import { OpenAIClientPool, runLocalAgent, ToolNotFoundError, UsageTally, type AgentItem, type ResolvedModel, type ToolBox } from '@conveyor/agent';
import { startFakeAnthropic, startFakeGemini, startFakeOllama, startFakeOpenAI, type FakeOpenAI, type NativeModelFake } from '../fakes/index.js';

/**
 * The local-agent loop against each native provider's fake over real HTTP (no broker): streaming,
 * a tool round whose thinking goes back as the API wants it, usage, non-streamed answers, and
 * fallback from one kind to another.
 */

const weatherTool = { type: 'function' as const, function: { name: 'weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

const toolBox: ToolBox = {
  definitions: () => [weatherTool],
  async call(name, args) {
    if (name === 'weather') return { city: args.city, forecast: 'sunny' };
    throw new ToolNotFoundError(name);
  },
};

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

function request(stream: boolean, overrides: Partial<RunRequest> = {}): RunRequest {
  return {
    v: 1, queryId: randomUUID(), pipelineId: 'p', conversationId: 'c', model: { primary: 'a', fallbacks: [] }, stream,
    route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 'u', senderId: 'u', replyTo: 'r' },
    messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'weather in Oslo?' }],
    exceptionHandling: 'show-hint', failureHint: 'Request failed.', ...overrides,
  };
}

describe('native model providers in the agent loop', () => {
  let anthropic: NativeModelFake;
  let gemini: NativeModelFake;
  let ollama: NativeModelFake;
  let openai: FakeOpenAI;
  const pool = new OpenAIClientPool();
  const fakes = () => ({ anthropic, gemini, ollama });

  before(async () => {
    [anthropic, gemini, ollama, openai] = await Promise.all([startFakeAnthropic({ apiKey: 'ant-key' }), startFakeGemini({ apiKey: 'gem-key' }), startFakeOllama(), startFakeOpenAI({ apiKey: 'oa-key' })]);
  });
  after(() => Promise.all([anthropic.close(), gemini.close(), ollama.close(), openai.close()]));
  beforeEach(() => {
    for (const f of [anthropic, gemini, ollama]) f.requests.length = 0;
    openai.requests.length = 0;
  });

  const keys: Record<Exclude<ModelProviderKind, 'openai'>, string> = { anthropic: 'ant-key', gemini: 'gem-key', ollama: '' };
  function model(kind: Exclude<ModelProviderKind, 'openai'>, extra: Partial<ResolvedModel> = {}): ResolvedModel {
    return { id: kind, provider: kind, baseUrl: fakes()[kind].url, apiKey: keys[kind], modelId: `${kind}-model`, abilities: ['func_call'], extraArgs: {}, timeoutMs: 10_000, ...extra };
  }

  async function go(run: RunRequest, models: ResolvedModel[]) {
    const items: AgentItem[] = [];
    const usage = new UsageTally();
    const outcome = await runLocalAgent(run, models, { pool, logger, emit: async (i) => void items.push(i), tools: toolBox, usage });
    return { items, outcome, usage, chunks: items.filter((i) => i.kind === 'chunk') };
  }

  for (const kind of ['anthropic', 'gemini', 'ollama'] as const) {
    test(`${kind}: streamed tool round with thinking kept, then the streamed answer`, async () => {
      const fake = fakes()[kind];
      fake.script(
        { thinking: 'I should look up the weather first.', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] },
        { thinking: 'Now answer.', text: 'It is sunny in Oslo today, enjoy the walk outside with friends and family.' },
      );
      const { outcome, chunks, items, usage } = await go(request(true), [model(kind, { reasoning: 'high' })]);
      assert.ok(outcome.ok, JSON.stringify(outcome));
      assert.equal(outcome.toolRounds, 1);
      assert.equal(fake.requests.length, 2, 'the second request was accepted: the thinking went back as the API wants it');
      const toolResult = items.find((i) => i.kind === 'tool_result');
      assert.ok(toolResult && toolResult.kind === 'tool_result' && toolResult.content.includes('sunny'));
      // The round's text shows the reasoning in think tags; the answer streams in several parts.
      assert.match(chunks[0].text, /^<think>\nI should look up the weather first\./);
      const answer = chunks.filter((c) => !c.hasToolCalls);
      assert.ok(answer.length >= 2, `the answer came in parts: ${answer.length}`);
      assert.ok(answer.at(-1)!.isFinal);
      assert.match(answer.at(-1)!.text, /It is sunny in Oslo today, enjoy the walk outside with friends and family\.$/);
      assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0, JSON.stringify(usage));
      assert.equal(usage.calls, 2);
      const first = fake.requests[0].body;
      const second = fake.requests[1].body;
      if (kind === 'anthropic') {
        assert.equal(first.system, 'be brief');
        assert.deepEqual(first.thinking, { type: 'enabled', budget_tokens: 8192 });
        assert.ok(Number(first.max_tokens) > 8192);
        assert.deepEqual((first.tools as Array<{ name: string }>).map((t) => t.name), ['weather']);
        const [, assistant, user] = second.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
        assert.deepEqual(assistant.content.map((b) => b.type), ['thinking', 'tool_use']);
        assert.equal(assistant.content[0].thinking, 'I should look up the weather first.');
        assert.match(String(assistant.content[0].signature), /^sig_/);
        assert.deepEqual(assistant.content[1].input, { city: 'Oslo' });
        assert.equal(user.content[0].type, 'tool_result');
        assert.equal(user.content[0].tool_use_id, assistant.content[1].id);
      } else if (kind === 'gemini') {
        assert.deepEqual(first.systemInstruction, { parts: [{ text: 'be brief' }] });
        assert.deepEqual((first.generationConfig as Record<string, unknown>).thinkingConfig, { thinkingBudget: 8192, includeThoughts: true });
        const contents = second.contents as Array<{ role: string; parts: Array<Record<string, unknown>> }>;
        assert.deepEqual(contents.map((c) => c.role), ['user', 'model', 'user']);
        const call = contents[1].parts.find((p) => p.functionCall)!;
        assert.match(String(call.thoughtSignature), /^gsig-/);
        assert.deepEqual(contents[2].parts[0].functionResponse, { name: 'weather', response: { result: JSON.stringify({ city: 'Oslo', forecast: 'sunny' }) } });
      } else {
        assert.equal(first.think, 'high');
        assert.equal(first.stream, true);
        const messages = second.messages as Array<Record<string, unknown>>;
        assert.deepEqual(messages.map((m) => m.role), ['system', 'user', 'assistant', 'tool']);
        assert.equal(messages[2].thinking, 'I should look up the weather first.');
        assert.deepEqual(messages[2].tool_calls, [{ function: { name: 'weather', arguments: { city: 'Oslo' } } }]);
        assert.equal(messages[3].tool_name, 'weather');
      }
    });

    test(`${kind}: non-streamed tool round and answer`, async () => {
      const fake = fakes()[kind];
      fake.script({ thinking: 'hmm', toolCalls: [{ name: 'weather', arguments: { city: 'Rome' } }] }, { text: 'Sunny in Rome.' });
      const { outcome, items } = await go(request(false, { removeThink: true }), [model(kind)]);
      assert.ok(outcome.ok, JSON.stringify(outcome));
      assert.deepEqual(items.map((i) => i.kind), ['message', 'tool_result', 'message']);
      const last = items.at(-1);
      assert.ok(last?.kind === 'message');
      assert.equal(last.message.content, 'Sunny in Rome.');
      assert.equal(fake.requests.length, 2);
    });
  }

  test('a wrong key: the failure hint for the user, the provider status in the error', async () => {
    for (const kind of ['anthropic', 'gemini'] as const) {
      const { outcome } = await go(request(true), [model(kind, { apiKey: 'wrong' })]);
      assert.equal(outcome.ok, false);
      assert.ok(!outcome.ok);
      assert.equal(outcome.userText, 'Request failed.');
      assert.match(outcome.error, kind === 'anthropic' ? /401/ : /400.*API key not valid/);
      assert.ok(!outcome.error.includes('wrong'), 'the key is not in the error');
    }
  });

  test('fallback across kinds: Anthropic fails, the OpenAI-compatible model answers', async () => {
    anthropic.script({ error: { status: 529, message: 'Overloaded' } });
    openai.script({ text: 'from the OpenAI-compatible fallback' });
    const fallback: ResolvedModel = { id: 'oa', baseUrl: openai.url, apiKey: 'oa-key', modelId: 'gpt-fake', abilities: ['func_call'], extraArgs: {}, timeoutMs: 10_000 };
    const { outcome, chunks } = await go(request(true), [model('anthropic'), fallback]);
    assert.ok(outcome.ok, JSON.stringify(outcome));
    assert.equal(outcome.model.id, 'oa');
    assert.equal(chunks.at(-1)!.text, 'from the OpenAI-compatible fallback');
    assert.equal(anthropic.requests.length, 1);
    // The OpenAI-compatible request carries no native reasoning blocks.
    assert.ok(openai.requests[0].body.messages!.every((m) => !('reasoning_blocks' in m)));
  });

  test('fallback across kinds: OpenAI-compatible fails, Gemini then Ollama', async () => {
    openai.script({ error: { status: 500, message: 'down' } });
    gemini.script({ error: { status: 503, message: 'unavailable' } });
    ollama.script({ text: 'local answer' });
    const primary: ResolvedModel = { id: 'oa', baseUrl: openai.url, apiKey: 'oa-key', modelId: 'gpt-fake', abilities: [], extraArgs: {}, timeoutMs: 10_000 };
    const { outcome } = await go(request(false), [primary, model('gemini'), model('ollama')]);
    assert.ok(outcome.ok, JSON.stringify(outcome));
    assert.equal(outcome.model.id, 'ollama');
  });
});
