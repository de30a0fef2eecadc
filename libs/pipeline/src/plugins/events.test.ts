import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noPluginOutcome, type PluginEventOutcome } from '@conveyor/contracts';
import type { PluginEventPayload, RunRequest } from '@conveyor/contracts';
import { STAGE_REGISTRY } from '../stages/registry.js';
import { recordingDeps, testQuery } from '../testing.js';
import type { PipelineDeps, PluginPort } from '../engine/ports.js';
import type { PipelineQuery } from '../engine/query.js';
import type { StageResult } from '../engine/result.js';
import { alteredUserMessage, emitMessageReceived } from './events.js';

/** A plugin port that records the events and answers each with the outcome `answer` gives. */
function plugins(answer: (event: PluginEventPayload) => Partial<PluginEventOutcome>): { port: PluginPort; seen: PluginEventPayload[] } {
  const seen: PluginEventPayload[] = [];
  return { seen, port: { emit: async (_q, event) => (seen.push(structuredClone(event)), { ...noPluginOutcome(), ...answer(event) }), listens: () => true, commands: () => [], runCommand: async () => '' } };
}

async function collect(name: keyof typeof STAGE_REGISTRY, q: PipelineQuery, extra: Partial<PipelineDeps>): Promise<StageResult[]> {
  const out: StageResult[] = [];
  const r = STAGE_REGISTRY[name]({ name, config: q.config, deps: recordingDeps(extra).deps }).process(q);
  if (Symbol.asyncIterator in (r as object)) for await (const x of r as AsyncIterable<StageResult>) out.push(x);
  else out.push(await (r as Promise<StageResult>));
  return out;
}

test('NormalMessageReceived: prevent_default with a reply chain answers in place of the runner', async () => {
  const p = plugins(() => ({ preventDefault: true, replyMessageChain: [{ type: 'Plain', text: 'pong' }] }));
  const runs: RunRequest[] = [];
  const q = testQuery({ chain: [{ type: 'Plain', text: 'ping' }] });
  const results = await collect('MessageProcessor', q, { plugins: p.port, handoff: { startRun: async (_q, run) => void runs.push(run) } });
  assert.deepEqual(results.map((r) => r.type), ['continue']);
  assert.deepEqual(q.respMessages, [{ kind: 'plugin', chain: [{ type: 'Plain', text: 'pong' }] }]);
  assert.deepEqual(runs, []);
  assert.equal(p.seen[0].event_name, 'PersonNormalMessageReceived');
  assert.equal(p.seen[0].event_name === 'PersonNormalMessageReceived' && p.seen[0].text_message, 'ping');
});

test('NormalMessageReceived: prevent_default without a reply is a silent INTERRUPT; groups get the Group event', async () => {
  const p = plugins(() => ({ preventDefault: true }));
  const runs: RunRequest[] = [];
  const q = testQuery({ group: true, chain: [{ type: 'Plain', text: 'shh' }] });
  const results = await collect('MessageProcessor', q, { plugins: p.port, handoff: { startRun: async (_q, run) => void runs.push(run) } });
  assert.deepEqual(results, [{ type: 'interrupt' }]);
  assert.deepEqual(runs, []);
  assert.equal(p.seen[0].event_name, 'GroupNormalMessageReceived');
});

test('NormalMessageReceived: user_message_alter replaces the user turn the runner gets', async () => {
  for (const [alter, content] of [
    ['rewritten', 'rewritten'],
    [{ type: 'text', text: 'one element' }, 'one element'],
    [[{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }], [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }]],
  ] as const) {
    const p = plugins(() => ({ userMessageAlter: structuredClone(alter) as PluginEventOutcome['userMessageAlter'] }));
    const runs: RunRequest[] = [];
    const q = testQuery({ chain: [{ type: 'Plain', text: 'original' }] });
    q.userMessage = { role: 'user', content: 'original' };
    assert.deepEqual(await collect('MessageProcessor', q, { plugins: p.port, handoff: { startRun: async (_q, run) => void runs.push(run) } }), []);
    assert.deepEqual(runs[0].messages.at(-1), { role: 'user', content });
  }
});

test('without a plugin port every event passes unchanged', async () => {
  const q = testQuery({ chain: [{ type: 'Plain', text: 'hi' }] });
  assert.equal(await emitMessageReceived(q, recordingDeps().deps), false);
  assert.deepEqual(alteredUserMessage({ role: 'user', content: 'x' }, 'y'), { role: 'user', content: 'y' });
});

test('PromptPreProcessing: plugins replace the preset and history before the date paragraph is added', async () => {
  const p = plugins((e) => (e.event_name === 'PromptPreProcessing' ? { defaultPrompt: [{ role: 'system', content: 'plugin preset' }], prompt: [] } : {}));
  const q = testQuery({ chain: [{ type: 'Plain', text: 'hi' }] });
  await collect('PreProcessor', q, {
    plugins: p.port,
    history: { load: async () => ({ conversationId: 'c1', history: [{ role: 'user', content: 'old' }, { role: 'assistant', content: 'older answer' }] }) },
  });
  const event = p.seen.find((e) => e.event_name === 'PromptPreProcessing');
  assert.ok(event && event.event_name === 'PromptPreProcessing');
  assert.equal(event.session_name, 'person_s1');
  assert.deepEqual(event.prompt.map((m) => m.content), ['old', 'older answer']);
  assert.ok(!JSON.stringify(event.default_prompt).includes('Current date'), 'the date paragraph is added after the event');
  assert.deepEqual(q.messages, []);
  assert.equal(q.prompt[0].role, 'system');
  assert.match(String(q.prompt[0].content), /^plugin preset\n\nCurrent date: /);
});

test('NormalMessageResponded: prevent_default holds the text back; a reply chain is sent instead', async () => {
  const item = { kind: 'message' as const, message: { role: 'assistant' as const, content: 'model answer' } };
  const held = testQuery();
  held.respMessages.push(structuredClone(item));
  const p1 = plugins(() => ({ preventDefault: true }));
  assert.deepEqual(await collect('ResponseWrapper', held, { plugins: p1.port }), [{ type: 'interrupt' }]);
  assert.deepEqual(held.respMessageChain, []);
  const seen = p1.seen[0];
  assert.ok(seen.event_name === 'NormalMessageResponded');
  assert.equal(seen.response_text, 'model answer');

  const replaced = testQuery();
  replaced.respMessages.push(structuredClone(item));
  const p2 = plugins(() => ({ replyMessageChain: [{ type: 'Plain', text: 'plugin text' }] }));
  assert.deepEqual((await collect('ResponseWrapper', replaced, { plugins: p2.port })).map((r) => r.type), ['continue']);
  assert.deepEqual(replaced.respMessageChain, [[{ type: 'Plain', text: 'plugin text' }]]);
});

test('NormalMessageResponded: a held-back final chunk still closes the streamed reply, without its text', async () => {
  const q = testQuery();
  q.respMessages.push({ kind: 'chunk', text: 'the answer', isFinal: true, hasToolCalls: false, toolNames: [] });
  const p = plugins(() => ({ preventDefault: true }));
  assert.deepEqual((await collect('ResponseWrapper', q, { plugins: p.port })).map((r) => r.type), ['continue']);
  assert.deepEqual(q.respMessageChain, [[]]);
  const mid = testQuery();
  mid.respMessages.push({ kind: 'chunk', text: 'the ans', isFinal: false, hasToolCalls: false, toolNames: [] });
  assert.deepEqual(await collect('ResponseWrapper', mid, { plugins: p.port }), [{ type: 'interrupt' }]);
  assert.deepEqual(mid.respMessageChain, []);
});

test('ResponseWrapper passes a plugin reply chain through unchanged', async () => {
  const q = testQuery();
  q.respMessages.push({ kind: 'plugin', chain: [{ type: 'Plain', text: 'as is' }] });
  assert.deepEqual((await collect('ResponseWrapper', q, {})).map((r) => r.type), ['continue']);
  assert.deepEqual(q.respMessageChain, [[{ type: 'Plain', text: 'as is' }]]);
});
