import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { RunRequest } from '@conveyor/contracts';
import { OpenAIClientPool, runLocalAgent, ToolNotFoundError, type AgentItem, type ResolvedModel, type ToolBox } from '@conveyor/agent';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';

/** The local-agent loop as a library: no broker, the fake OpenAI server over real HTTP. */

const weatherTool = { type: 'function' as const, function: { name: 'weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
const failTool = { type: 'function' as const, function: { name: 'explode', description: 'Always fails', parameters: { type: 'object', properties: {} } } };

const toolBox: ToolBox = {
  definitions: () => [weatherTool, failTool],
  async call(name, args) {
    if (name === 'weather') return { city: args.city, forecast: 'sunny' };
    if (name === 'explode') throw new Error('boom');
    throw new ToolNotFoundError(name);
  },
};

const logs: { level: string; msg: string }[] = [];
const logger = {
  info: (_: object, msg: string) => void logs.push({ level: 'info', msg }),
  warn: (_: object, msg: string) => void logs.push({ level: 'warn', msg }),
  error: (_: object, msg: string) => void logs.push({ level: 'error', msg }),
};

describe('the local-agent loop', () => {
  let llm: FakeOpenAI;
  const pool = new OpenAIClientPool();
  let model: (id: string, abilities?: string[]) => ResolvedModel;

  before(async () => {
    llm = await startFakeOpenAI();
    model = (id, abilities = ['func_call']) => ({ id, baseUrl: llm.url, apiKey: 'k', modelId: `model-${id}`, abilities, extraArgs: {}, timeoutMs: 10_000 });
  });
  after(() => llm.close());
  beforeEach(() => {
    llm.requests.length = 0;
    logs.length = 0;
    llm.setDefault({ text: 'default answer' });
  });

  function request(stream: boolean, overrides: Partial<RunRequest> = {}): RunRequest {
    return {
      v: 1, queryId: randomUUID(), pipelineId: 'p', conversationId: 'c', model: { primary: 'a', fallbacks: [] }, stream,
      route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 'u', senderId: 'u', replyTo: 'r' },
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
      exceptionHandling: 'show-hint', failureHint: 'Request failed.', ...overrides,
    };
  }

  async function go(run: RunRequest, models: ResolvedModel[], extra: { tools?: ToolBox; maxToolRounds?: number } = {}) {
    const items: AgentItem[] = [];
    const outcome = await runLocalAgent(run, models, { pool, logger, emit: async (i) => void items.push(i), tools: extra.tools ?? toolBox, maxToolRounds: extra.maxToolRounds });
    return { items, outcome, chunks: items.filter((i) => i.kind === 'chunk') };
  }

  test('streamed text: cumulative snapshots every 8 deltas, then the final one', async () => {
    const text = Array.from({ length: 20 }, (_, i) => `word${i + 1}`).join(' ');
    llm.script({ text });
    const { chunks, outcome } = await go(request(true), [model('a')]);
    // 20 word deltas and the finish delta: snapshots after 8, 16 and the last.
    assert.deepEqual(chunks.map((c) => [c.sequence, c.isFinal, c.text.split(' ').filter(Boolean).length]), [[1, false, 8], [2, false, 16], [3, true, 20]]);
    assert.equal(chunks.at(-1)!.text, text);
    assert.ok(outcome.ok);
    assert.deepEqual(outcome.messages, [{ role: 'assistant', content: text }]);
    assert.equal(llm.requests[0].body.stream, true);
    assert.deepEqual(llm.requests[0].body.stream_options, { include_usage: true });
  });

  test('two tool calls in one turn, arguments split across chunks; errors go back to the model as err: messages', async () => {
    llm.script(
      { text: 'Checking.', toolCalls: [{ name: 'weather', arguments: '{"city": "Oslo, Norway"}' }, { name: 'explode', arguments: '{}' }] },
      { toolCalls: [{ name: 'no_such_tool', arguments: '{}' }, { name: 'weather', arguments: '{"city": ' }] },
      { text: 'Sunny in Oslo.' },
    );
    const { items, outcome, chunks } = await go(request(true), [model('a')]);
    assert.ok(outcome.ok, JSON.stringify(outcome));
    assert.equal(outcome.toolRounds, 2);
    const second = llm.requests[1].body.messages!;
    const calls = second[2].tool_calls as { id: string; function: { name: string; arguments: string } }[];
    assert.deepEqual(calls.map((c) => [c.function.name, c.function.arguments]), [['weather', '{"city": "Oslo, Norway"}'], ['explode', '{}']]);
    assert.deepEqual(second.slice(3).map((m) => [m.role, m.tool_call_id, m.content]), [
      ['tool', calls[0].id, JSON.stringify({ city: 'Oslo, Norway', forecast: 'sunny' })],
      ['tool', calls[1].id, 'err: boom'],
    ]);
    const third = llm.requests[2].body.messages!.slice(-2).map((m) => m.content as string);
    assert.equal(third[0], 'err: Tool not found: no_such_tool');
    assert.match(third[1], /^err: .*JSON/);
    // The user sees round texts, each ending with a final part; sequence numbers never repeat.
    assert.deepEqual(chunks.map((c) => [c.text, c.isFinal, c.hasToolCalls]), [['Checking.', true, true], ['', true, true], ['Sunny in Oslo.', true, false]]);
    assert.deepEqual(chunks.map((c) => c.sequence), [1, 2, 3]);
    assert.equal(items.filter((i) => i.kind === 'tool_result').length, 4);
    // History gets the whole turn: assistant with calls, tool results, the next round, the answer.
    assert.deepEqual(outcome.messages.map((m) => m.role), ['assistant', 'tool', 'tool', 'assistant', 'tool', 'tool', 'assistant']);
    assert.equal(outcome.messages.at(-1)!.content, 'Sunny in Oslo.');
  });

  test('non-streaming: each assistant message is yielded, tools run the same way', async () => {
    llm.script({ text: 'One moment.', toolCalls: [{ name: 'weather', arguments: '{"city":"Rome"}' }] }, { text: 'Sunny in Rome.' });
    const { items, outcome } = await go(request(false), [model('a')]);
    assert.ok(outcome.ok);
    assert.deepEqual(items.map((i) => i.kind), ['message', 'tool_result', 'message']);
    assert.equal(llm.requests[0].body.stream, false);
    assert.equal((items[2] as { message: { content: string } }).message.content, 'Sunny in Rome.');
  });

  test('the 128-round cap ends in an answer without tools, with a log line', async () => {
    llm.setDefault((body) => (body.tools ? { toolCalls: [{ name: 'weather', arguments: '{"city":"Loop"}' }] } : { text: 'Final answer without tools.' }));
    const { outcome, chunks } = await go(request(true), [model('a')]);
    assert.ok(outcome.ok);
    assert.equal(outcome.capped, true);
    assert.equal(outcome.toolRounds, 128);
    assert.equal(llm.requests.length, 130, 'round 0, 128 tool rounds, one last call');
    assert.equal(llm.requests.at(-1)!.body.tools, undefined);
    assert.equal(chunks.at(-1)!.text, 'Final answer without tools.');
    assert.ok(chunks.every((c, i) => i === 0 || c.sequence > chunks[i - 1].sequence), 'sequence increases across all rounds');
    assert.ok(logs.some((l) => l.level === 'warn' && l.msg.includes('tool round limit reached (128)')));
    // The calls the cap left open were answered, as the API requires.
    assert.match(llm.requests.at(-1)!.body.messages!.at(-1)!.content as string, /^err: tool round limit/);
  });

  test('streaming: the primary failing before its first chunk hands over to the fallback', async () => {
    llm.script({ error: { status: 503, message: 'overloaded', type: 'server_error' } }, { text: 'from the fallback' });
    const { outcome, chunks } = await go(request(true), [model('a'), model('b')]);
    assert.ok(outcome.ok);
    assert.equal(outcome.model.id, 'b');
    assert.deepEqual(llm.requests.map((r) => r.body.model), ['model-a', 'model-b']);
    assert.equal(chunks.at(-1)!.text, 'from the fallback');
  });

  test('streaming: the primary failing after its first chunk gets no fallback; the user gets the failure hint', async () => {
    llm.script({ text: 'one two three four five six', dropAfterChunks: 3, tokensPerSecond: 200 });
    const { outcome } = await go(request(true), [model('a'), model('b')]);
    assert.equal(outcome.ok, false);
    assert.equal(!outcome.ok && outcome.userText, 'Request failed.');
    assert.deepEqual(llm.requests.map((r) => r.body.model), ['model-a']);
  });

  test('the fallback model keeps answering the tool rounds', async () => {
    llm.script({ error: { status: 500, message: 'down' } }, { toolCalls: [{ name: 'weather', arguments: '{}' }] }, { text: 'done' });
    const { outcome } = await go(request(false), [model('a'), model('b')]);
    assert.ok(outcome.ok);
    assert.deepEqual(llm.requests.map((r) => r.body.model), ['model-a', 'model-b', 'model-b']);
  });

  test('a model without func_call gets no tools', async () => {
    await go(request(true), [model('a', [])]);
    assert.equal(llm.requests[0].body.tools, undefined);
    await go(request(true), [model('a')]);
    assert.deepEqual((llm.requests[1].body.tools as { function: { name: string } }[]).map((t) => t.function.name), ['weather', 'explode']);
  });

  test('no model configured: the failure hint, and the log names it', async () => {
    const { outcome, items } = await go(request(true), []);
    assert.deepEqual(outcome, { ok: false, error: 'No LLM model configured for local-agent runner', userText: 'Request failed.' });
    assert.equal(items.length, 0);
    assert.ok(logs.some((l) => l.level === 'error' && l.msg === 'No LLM model configured for local-agent runner'));
  });

  test('remove-think hides reasoning in both paths', async () => {
    llm.script({ text: '<think>secret plan</think>\nVisible.' }, { text: '<think>secret</think> Shown.' });
    const streamed = await go(request(true, { removeThink: true }), [model('a')]);
    assert.equal(streamed.chunks.at(-1)!.text, 'Visible.');
    const plain = await go(request(false, { removeThink: true }), [model('a')]);
    assert.equal((plain.items[0] as { message: { content: string } }).message.content, 'Shown.');
  });

  test('remove-think: reasoning begun before the first delta (a stray </think>) is never shown, in any streamed part', async () => {
    const reasoning = Array.from({ length: 20 }, (_, i) => `thought${i}`).join(' ');
    llm.script({ text: `${reasoning}</think>\n\nUse <think>x</think> as is.` });
    const { chunks, outcome } = await go(request(true, { removeThink: true }), [model('a')]);
    assert.ok(chunks.every((c) => !c.text.includes('thought')), JSON.stringify(chunks.map((c) => c.text)));
    assert.equal(chunks.at(-1)!.text, 'Use  as is.');
    assert.ok(outcome.ok);
    assert.equal(outcome.messages.at(-1)!.content, 'Use  as is.');
  });
});
