import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ExternalRunnerError, langflowAnswer, runCoze, runDashscope, runDify, runLangflow, runN8n, runWeknora, runDeerflow, deerflowText, type AgentItem, type ExternalInput } from '@conveyor/agent';
import { startFakeCoze, startFakeDashscope, startFakeDify, startFakeLangflow, startFakeN8n, startFakeWeknora, startFakeDeerflow, type FakeExternal, type FakeKeyedExternal } from '../fakes/external-runner-apis.js';

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
    // message_end's metadata.usage: 10 + 2 words of the query in, the answer's 18 words out.
    assert.deepEqual(result.usage, { inputTokens: 12, outputTokens: 18 });
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

/** coze-api, langflow-api, dashscope-app-api, weknora-api and deerflow-api against fakes of their HTTP APIs, and Dify's chatflow apps. */
describe('more external runners', () => {
  let fake: FakeKeyedExternal | FakeExternal | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  const answer = Array.from({ length: 18 }, (_, i) => `part${i + 1}`).join(' ');
  function input(stream: boolean, extra: Partial<ExternalInput> = {}) {
    const items: AgentItem[] = [];
    return { items, input: { query: 'hello there', user: 'person_u1', variables: { launcher_id: 'u1' }, stream, removeThink: false, emit: async (i: AgentItem) => void items.push(i), ...extra } };
  }
  const finals = (items: AgentItem[]) => items.flatMap((x) => (x.kind === 'chunk' && x.isFinal ? [x.text] : []));
  const coze = (url: string) => ({ apiBase: url, apiKey: 'coze-token', botId: 'bot-7', autoSaveHistory: true, timeoutMs: 10_000 });

  test('Coze: deltas stream every 8 with one final part; the request is LangBot\'s; the conversation id comes from the chat', async () => {
    fake = await startFakeCoze({ apiKey: 'coze-token', answer });
    const { items, input: i } = input(true);
    const result = await runCoze(coze(fake.url), i);
    assert.equal(result.text, answer);
    assert.equal(result.conversationId, 'coze-conv-1');
    assert.deepEqual(result.usage, { inputTokens: 12, outputTokens: 18 }, 'chat.completed usage: input_count and output_count');
    assert.deepEqual(items.filter((x) => x.kind === 'chunk').map((c) => [c.isFinal, c.text.trim().split(' ').length]), [[false, 8], [false, 16], [true, 18]]);
    const req = fake.requests[0];
    assert.equal(req.path, '/v3/chat');
    assert.equal(req.headers.authorization, 'Bearer coze-token');
    assert.deepEqual(req.body, { bot_id: 'bot-7', user_id: 'person_u1', stream: true, auto_save_history: true, additional_messages: [{ role: 'user', content: 'hello there', content_type: 'text', meta_data: null }] });
    await runCoze(coze(fake.url), input(false, { conversationId: 'coze-conv-1' }).input);
    assert.equal(fake.requests[1].path, '/v3/chat?conversation_id=coze-conv-1');
  });

  test('Coze: reasoning_content is shown in <think> unless remove-think; chat.failed and a refused token fail the run', async () => {
    fake = await startFakeCoze({ apiKey: 'coze-token', answer: 'The answer.', reasoning: 'Let me think.' });
    assert.equal((await runCoze(coze(fake.url), input(true).input)).text, '<think>\nLet me think.\n</think>\nThe answer.');
    const hidden = input(true, { removeThink: true });
    assert.equal((await runCoze(coze(fake.url), hidden.input)).text, 'The answer.');
    assert.ok(hidden.items.every((x) => x.kind === 'chunk' && !x.text.includes('think')), 'no snapshot shows the reasoning');
    await assert.rejects(runCoze({ ...coze(fake.url), apiKey: 'wrong' }, input(true).input), /Coze answered HTTP 401/);
    await fake.close();
    fake = await startFakeCoze({ apiKey: 'coze-token', answer: 'half', failWith: 'bot is offline' });
    await assert.rejects(runCoze(coze(fake.url), input(true).input), (err: Error) => err instanceof ExternalRunnerError && /bot is offline/.test(err.message));
  });

  test('Langflow streaming: token events stream, the end event\'s run response is the answer; tweaks and types are sent', async () => {
    fake = await startFakeLangflow({ apiKey: 'lf-key', flowId: 'flow-1', answer });
    const { items, input: i } = input(true, { conversationId: 'lf-session-9' });
    const cfg = { baseUrl: fake.url, apiKey: 'lf-key', flowId: 'flow-1', inputType: 'chat', outputType: 'chat', tweaks: { 'OpenAIModel-x': { temperature: 0.2 } }, timeoutMs: 10_000 };
    const result = await runLangflow(cfg, i);
    assert.equal(result.text, answer);
    assert.equal(result.conversationId, 'lf-session-9');
    assert.deepEqual(items.filter((x) => x.kind === 'chunk').map((c) => c.isFinal), [false, false, true]);
    assert.equal(fake.requests[0].path, '/api/v1/run/flow-1?stream=true');
    assert.equal(fake.requests[0].headers['x-api-key'], 'lf-key');
    assert.deepEqual(fake.requests[0].body, { output_type: 'chat', input_type: 'chat', input_value: 'hello there', session_id: 'lf-session-9', tweaks: { 'OpenAIModel-x': { temperature: 0.2 } } });

    const plain = input(false);
    const once = await runLangflow({ ...cfg, tweaks: {} }, plain.input);
    assert.equal(fake.requests[1].path, '/api/v1/run/flow-1');
    assert.equal(fake.requests[1].body.tweaks, undefined, 'empty tweaks are not sent');
    assert.match(String(once.conversationId), /^[0-9a-f-]{36}$/, 'a new conversation gets a session id');
    assert.deepEqual(plain.items, [{ kind: 'message', message: { role: 'assistant', content: answer } }]);
    assert.equal(langflowAnswer({ messages: [{ message: 'older shape' }] }), 'older shape');
    assert.equal(langflowAnswer({ outputs: [] }), undefined);
    await assert.rejects(runLangflow({ ...cfg, apiKey: 'wrong' }, input(true).input), /Langflow answered HTTP 403/);
  });

  const dashscope = (url: string, appType: 'agent' | 'workflow' = 'agent') => ({ baseUrl: url, appType, apiKey: 'ds-key', appId: 'app-1', referencesQuote: '参考资料来自:', timeoutMs: 10_000 });

  test('DashScope agent: incremental text streams, thoughts in <think> unless remove-think, cited documents replace their tags', async () => {
    fake = await startFakeDashscope({ apiKey: 'ds-key', appId: 'app-1', answer: 'See <ref>[1]</ref> and <ref>[7]</ref>.', thought: 'Searching the docs.', references: [{ index_id: '1', doc_name: 'manual.pdf' }] });
    const { items, input: i } = input(true, { conversationId: 'sess-4' });
    const result = await runDashscope(dashscope(fake.url), i);
    assert.equal(result.text, '<think>\nSearching the docs.\n</think>\nSee (参考资料来自: manual.pdf) and <ref>[7]</ref>.');
    assert.equal(result.conversationId, 'sess-4');
    assert.deepEqual(result.usage, { inputTokens: 12, outputTokens: 4 }, 'the last chunk\'s usage.models');
    assert.equal(finals(items).length, 1);
    const req = fake.requests[0];
    assert.equal(req.path, '/api/v1/apps/app-1/completion');
    assert.equal(req.headers['x-dashscope-sse'], 'enable');
    assert.deepEqual(req.body, { input: { prompt: 'hello there', session_id: 'sess-4' }, parameters: { incremental_output: true, has_thoughts: true, enable_thinking: true }, debug: {} });
    const hidden = await runDashscope(dashscope(fake.url), input(false, { removeThink: true }).input);
    assert.equal(hidden.text, 'See (参考资料来自: manual.pdf) and <ref>[7]</ref>.');
    assert.equal(hidden.conversationId, 'ds-session-1', 'a new conversation takes the session the app opened');
    assert.deepEqual(fake.requests[1].body.parameters, { incremental_output: true, has_thoughts: false, enable_thinking: false });
    await assert.rejects(runDashscope({ ...dashscope(fake.url), apiKey: 'wrong' }, input(true).input), /DashScope answered HTTP 401: .*InvalidApiKey/);
  });

  test('DashScope workflow: message_format deltas, the query variables as biz_params', async () => {
    fake = await startFakeDashscope({ apiKey: 'ds-key', appId: 'app-1', answer });
    const { items, input: i } = input(true);
    const result = await runDashscope(dashscope(fake.url, 'workflow'), i);
    assert.equal(result.text, answer);
    assert.deepEqual(items.filter((x) => x.kind === 'chunk').map((c) => c.isFinal), [false, false, true]);
    assert.deepEqual(fake.requests[0].body, { input: { prompt: 'hello there', biz_params: { launcher_id: 'u1' } }, parameters: { incremental_output: true, flow_stream_mode: 'message_format' }, debug: {} });
  });

  const weknora = (url: string, appType: 'agent' | 'chat' = 'agent') => ({ baseUrl: url, apiKey: 'wk-key', appType, agentId: appType === 'agent' ? 'builtin-smart-reasoning' : 'builtin-quick-answer', knowledgeBaseIds: ['kb-1'], webSearchEnabled: true, basePrompt: '请回答用户的问题。', timeoutMs: 10_000 });

  test('WeKnora agent: a new conversation opens a session first; answer events stream every 8 with one final part', async () => {
    const wk = await startFakeWeknora({ apiKey: 'wk-key', answer });
    fake = wk;
    const { items, input: i } = input(true);
    const result = await runWeknora(weknora(wk.url), i);
    assert.equal(result.text, answer, 'thinking and tool calls are not part of the reply');
    assert.equal(result.conversationId, 'wk-session-1');
    assert.deepEqual(wk.sessions.map((r) => [r.path, r.headers['x-api-key'], r.body]), [['/api/v1/sessions', 'wk-key', { title: 'IM Chat - person_u1' }]]);
    assert.deepEqual(items.filter((x) => x.kind === 'chunk').map((c) => [c.isFinal, c.text.trim().split(' ').length]), [[false, 8], [false, 16], [true, 18]]);
    assert.equal(wk.requests[0].path, '/api/v1/agent-chat/wk-session-1');
    assert.equal(wk.requests[0].headers['x-api-key'], 'wk-key');
    assert.deepEqual(wk.requests[0].body, { query: 'hello there', channel: 'im', agent_enabled: true, agent_id: 'builtin-smart-reasoning', knowledge_base_ids: ['kb-1'], web_search_enabled: true });

    const again = input(false, { conversationId: 'wk-session-1', query: '' });
    await runWeknora(weknora(wk.url), again.input);
    assert.equal(wk.sessions.length, 1, 'a kept conversation opens no session');
    assert.equal(wk.requests[1].body.query, '请回答用户的问题。', 'a message without text sends the base prompt');
    assert.deepEqual(again.items, [{ kind: 'message', message: { role: 'assistant', content: answer } }]);
  });

  test('WeKnora chat: /knowledge-chat without agent switches; an error event, an unknown session and a refused key fail the run', async () => {
    let wk = await startFakeWeknora({ apiKey: 'wk-key', answer: 'from the knowledge base' });
    fake = wk;
    const result = await runWeknora(weknora(wk.url, 'chat'), input(true, { conversationId: 'wk-session-0' }).input);
    assert.equal(result.text, 'from the knowledge base');
    assert.equal(wk.requests[0].path, '/api/v1/knowledge-chat/wk-session-0');
    assert.deepEqual(wk.requests[0].body, { query: 'hello there', channel: 'im', agent_id: 'builtin-quick-answer', knowledge_base_ids: ['kb-1'] });
    await assert.rejects(runWeknora(weknora(wk.url), input(true, { conversationId: 'wk-session-9' }).input), /WeKnora answered HTTP 404: .*session not found/);
    await assert.rejects(runWeknora({ ...weknora(wk.url), apiKey: 'wrong' }, input(true).input), /WeKnora answered HTTP 401: .*invalid API key/);
    await wk.close();
    wk = await startFakeWeknora({ apiKey: 'wk-key', answer: 'half done', failWith: 'model quota exhausted' });
    fake = wk;
    await assert.rejects(runWeknora(weknora(wk.url), input(true).input), (err: Error) => err instanceof ExternalRunnerError && err.message === 'WeKnora error: model quota exhausted');
  });

  const deerflow = (url: string) => ({ apiBase: url, apiKey: 'df-key', authHeader: '', assistantId: 'lead_agent', modelName: '', thinkingEnabled: false, planMode: false, subagentEnabled: false, maxConcurrentSubagents: 3, recursionLimit: 1000, timeoutMs: 10_000 });

  test('DeerFlow: a new conversation opens a thread; message deltas stream every 8, the state\'s AI message is the answer; a kept thread\'s old answer is not shown again', async () => {
    const df = await startFakeDeerflow({ apiKey: 'df-key', answer });
    fake = df;
    const { items, input: i } = input(true);
    const result = await runDeerflow(deerflow(df.url), i);
    assert.equal(result.text, answer);
    assert.equal(result.conversationId, 'df-thread-1');
    assert.deepEqual(items.filter((x) => x.kind === 'chunk').map((c) => [c.isFinal, c.text.trim().split(' ').length]), [[false, 8], [false, 16], [true, 18]]);
    const req = df.requests[0];
    assert.equal(req.path, '/api/langgraph/threads/df-thread-1/runs/stream');
    assert.equal(req.headers.authorization, 'Bearer df-key');
    const configurable = { thread_id: 'df-thread-1', thinking_enabled: false, is_plan_mode: false, subagent_enabled: false };
    assert.deepEqual(req.body, { assistant_id: 'lead_agent', input: { messages: [{ role: 'user', content: 'hello there' }] }, stream_mode: ['values', 'messages-tuple', 'custom'], context: configurable, config: { recursion_limit: 1000, configurable } });

    // The second turn's first state holds the first answer: no part shows it.
    const again = input(true, { conversationId: 'df-thread-1', query: '' });
    const second = await runDeerflow({ ...deerflow(df.url), apiKey: 'not-sent', authHeader: 'Bearer df-key', subagentEnabled: true, modelName: 'gpt-x' }, again.input);
    assert.equal(second.text, answer);
    assert.equal(df.threads.size, 1, 'a kept conversation opens no thread');
    assert.equal(df.requests[1].headers.authorization, 'Bearer df-key', 'auth-header is the whole Authorization value, over api-key');
    assert.equal(df.requests[1].body.input.messages[0].content, 'continue', 'a message without text asks to continue');
    assert.deepEqual(df.requests[1].body.config.configurable, { thread_id: 'df-thread-1', thinking_enabled: false, is_plan_mode: false, subagent_enabled: true, max_concurrent_subagents: 3, model_name: 'gpt-x' });
    const firstPart = again.items.find((x) => x.kind === 'chunk');
    assert.ok(firstPart?.kind === 'chunk' && firstPart.text === 'part1 part2 part3 part4 part5 part6 part7 part8 ', `the first part starts the new answer: ${JSON.stringify(firstPart)}`);
  });

  test('DeerFlow: clarification, failed subtasks, an error event, a timeout mid-run (partial answer with the note) and a refused key', async () => {
    let df = await startFakeDeerflow({ apiKey: 'df-key', answer, clarify: 'Which city do you mean?' });
    fake = df;
    assert.equal((await runDeerflow(deerflow(df.url), input(true).input)).text, 'Which city do you mean?');
    await df.close();
    df = await startFakeDeerflow({ apiKey: 'df-key', answer, failedTask: 'search backend down' });
    fake = df;
    const failed = input(false);
    assert.equal((await runDeerflow(deerflow(df.url), failed.input)).text, 'DeerFlow subtask failed: research-1: search backend down');
    assert.deepEqual(failed.items, [{ kind: 'message', message: { role: 'assistant', content: 'DeerFlow subtask failed: research-1: search backend down' } }]);
    await assert.rejects(runDeerflow({ ...deerflow(df.url), apiKey: 'wrong' }, input(true).input), /DeerFlow answered HTTP 401: .*Invalid authentication/);
    await assert.rejects(runDeerflow(deerflow(df.url), input(true, { conversationId: 'df-thread-9' }).input), /DeerFlow answered HTTP 404: .*not found/);
    await df.close();
    df = await startFakeDeerflow({ apiKey: 'df-key', answer, failWith: 'graph crashed' });
    fake = df;
    await assert.rejects(runDeerflow(deerflow(df.url), input(true).input), (err: Error) => err instanceof ExternalRunnerError && /^DeerFlow stream error event: .*graph crashed/.test(err.message));
    await df.close();
    df = await startFakeDeerflow({ apiKey: 'df-key', answer, stallAfter: 3 });
    fake = df;
    const partial = await runDeerflow({ ...deerflow(df.url), timeoutMs: 1_000 }, input(true).input);
    assert.equal(partial.text, 'part1 part2 part3 \n\nDeerFlow stream 在 1s 后超时，返回部分结果。');
    assert.equal(deerflowText([{ type: 'text', text: 'a' }, { content: [{ type: 'text', text: 'b' }] }, 'c']), 'a\nb\nc');
  });

  test('Dify chatflow apps are called as chat apps (LangBot 4.x)', async () => {
    fake = await startFakeDify({ apiKey: 'app-key', answer: 'chatflow answer', conversationId: 'conv-cf' });
    const result = await runDify({ baseUrl: fake.url, appType: 'chatflow', apiKey: 'app-key', basePrompt: '', timeoutMs: 10_000 }, input(true).input);
    assert.equal(fake.requests[0].path, '/v1/chat-messages');
    assert.equal(result.text, 'chatflow answer');
    assert.equal(result.conversationId, 'conv-cf');
  });
});
