import { createServer, type IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeServer, listen, readBody } from './http-util.js';

/** Fakes of the external runner APIs Conveyor speaks, each as its own HTTP server checking the service's auth. */

export interface RecordedExternalRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface FakeExternal {
  url: string;
  requests: RecordedExternalRequest[];
  close(): Promise<void>;
}

/** A fake whose accepted key can be revoked while it runs (`fake.apiKey = 'other'`), as an operator rotates one. */
export interface FakeKeyedExternal extends FakeExternal {
  apiKey: string;
}

/**
 * The token counts a fake service reports for a call: the prompt's words plus a fixed 10 for the
 * app's own prompt, and the answer's words. Deterministic, so a test can expect them.
 */
export function fakeUsage(prompt: string, answer: string): { input: number; output: number } {
  const words = (t: string) => t.split(/\s+/).filter(Boolean).length;
  return { input: 10 + words(prompt), output: words(answer) };
}

/** Dify's `message_end` metadata.usage, with the fields its API returns. */
function difyUsage(prompt: string, answer: string) {
  const { input, output } = fakeUsage(prompt, answer);
  return {
    prompt_tokens: input, prompt_unit_price: '0.001', prompt_price_unit: '0.001', prompt_price: (input * 0.000001).toFixed(7),
    completion_tokens: output, completion_unit_price: '0.002', completion_price_unit: '0.001', completion_price: (output * 0.000002).toFixed(7),
    total_tokens: input + output, total_price: ((input + output) * 0.0000015).toFixed(7), currency: 'USD', latency: 0.42,
  };
}

/**
 * Dify: `POST /v1/chat-messages` streams `message` events (the answer split in words) and
 * `message_end`; `POST /v1/workflows/run` streams `text_chunk` events and `workflow_finished` with
 * `outputs.summary`. Requests need `Authorization: Bearer <apiKey>`.
 */
export async function startFakeDify(opts: { apiKey: string; answer: string; conversationId?: string; failWith?: string }): Promise<FakeKeyedExternal> {
  const requests: RecordedExternalRequest[] = [];
  const fake: FakeKeyedExternal = { apiKey: opts.apiKey, url: '', requests, close: () => closeServer(server) };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${fake.apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ code: 'unauthorized', message: 'Access token is invalid', status: 401 }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    const conversation_id = body.conversation_id || opts.conversationId || 'dify-conv-1';
    const words = opts.answer.match(/\S+\s*/g) ?? [];
    res.write('event: ping\n\n');
    if (req.url === '/v1/chat-messages') {
      for (const w of words) {
        send({ event: 'message', answer: w, conversation_id, message_id: 'm1' });
        await sleep(1);
      }
      if (opts.failWith) send({ event: 'error', code: 'provider_error', message: opts.failWith, status: 500 });
      else send({ event: 'message_end', conversation_id, message_id: 'm1', metadata: { usage: difyUsage(body.query ?? '', opts.answer) } });
    } else if (req.url === '/v1/workflows/run') {
      send({ event: 'workflow_started', data: { id: 'run1' } });
      for (const w of words) send({ event: 'text_chunk', data: { text: w } });
      send({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { summary: opts.answer } } });
    }
    res.end();
  });
  fake.url = `${await listen(server)}/v1`;
  return fake;
}

/**
 * n8n: `POST /webhook`. `streaming`: `{"type":"item","content":…}` objects back to back, written in
 * pieces that split objects, then `{"type":"end"}`; otherwise one JSON object `{response: answer}`.
 * With `header` set, requests must carry it.
 */
export async function startFakeN8n(opts: { answer: string; streaming: boolean; header?: [string, string] }): Promise<FakeExternal> {
  const requests: RecordedExternalRequest[] = [];
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (opts.header && req.headers[opts.header[0].toLowerCase()] !== opts.header[1]) return void res.writeHead(403).end('{"message":"Authorization data is wrong!"}');
    res.writeHead(200, { 'content-type': opts.streaming ? 'application/json; charset=utf-8' : 'application/json' });
    if (!opts.streaming) return void res.end(JSON.stringify({ response: opts.answer }));
    const objects = [{ type: 'begin', metadata: {} }, ...(opts.answer.match(/\S+\s*/g) ?? []).map((content) => ({ type: 'item', content })), { type: 'end' }];
    const text = objects.map((o) => JSON.stringify(o)).join('\n');
    // Split at arbitrary points so objects straddle writes, as on a real network.
    for (let i = 0; i < text.length; i += 7) {
      res.write(text.slice(i, i + 7));
      await sleep(0);
    }
    res.end();
  });
  const base = await listen(server);
  return { url: `${base}/webhook`, requests, close: () => closeServer(server) };
}


const wordsOf = (answer: string) => answer.match(/\S+\s*/g) ?? [];

/**
 * Coze chat API v3: `POST /v3/chat` with `Authorization: Bearer <token>` streams named events as
 * coze.cn sends them: `conversation.chat.created` (the chat with its `conversation_id`, a new one unless
 * `?conversation_id=` names one), `conversation.chat.in_progress`, one `conversation.message.delta`
 * per word (after `reasoning` as `reasoning_content` deltas), `conversation.message.completed`,
 * `conversation.chat.completed` and `done` (`failWith`: `conversation.chat.failed` instead). A wrong token is HTTP 401 with Coze's JSON error body.
 */
export async function startFakeCoze(opts: { apiKey: string; answer: string; reasoning?: string; failWith?: string }): Promise<FakeKeyedExternal> {
  const requests: RecordedExternalRequest[] = [];
  let conversations = 0;
  const fake: FakeKeyedExternal = { apiKey: opts.apiKey, url: '', requests, close: () => closeServer(server) };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${fake.apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ code: 4100, msg: 'authentication is invalid' }));
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method !== 'POST' || url.pathname !== '/v3/chat' || body.stream !== true) return void res.writeHead(404).end();
    const conversation_id = url.searchParams.get('conversation_id') || `coze-conv-${++conversations}`;
    const chat = { id: 'chat-1', conversation_id, bot_id: body.bot_id, status: 'in_progress' };
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: string, data: unknown) => res.write(`event:${event}\ndata:${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
    send('conversation.chat.created', { ...chat, status: 'created' });
    send('conversation.chat.in_progress', chat);
    const msg = { id: 'msg-1', conversation_id, bot_id: body.bot_id, role: 'assistant', type: 'answer', content_type: 'text', chat_id: 'chat-1' };
    for (const w of wordsOf(opts.reasoning ?? '')) send('conversation.message.delta', { ...msg, content: '', reasoning_content: w });
    for (const w of wordsOf(opts.answer)) {
      send('conversation.message.delta', { ...msg, content: w });
      await sleep(1);
    }
    if (opts.failWith) {
      send('conversation.chat.failed', { ...chat, status: 'failed', last_error: { code: 5000, msg: opts.failWith } });
      send('done', '"[DONE]"');
      return void res.end();
    }
    send('conversation.message.completed', { ...msg, content: opts.answer });
    const usage = fakeUsage(body.additional_messages?.[0]?.content ?? '', opts.answer);
    send('conversation.chat.completed', { ...chat, status: 'completed', usage: { token_count: usage.input + usage.output, output_count: usage.output, input_count: usage.input } });
    send('done', '"[DONE]"');
    res.end();
  });
  fake.url = await listen(server);
  return fake;
}

/**
 * Langflow: `POST /api/v1/run/{flow}` with `x-api-key`. With `?stream=true` it writes its events as
 * Langflow does, one JSON object per event followed by a blank line: `add_message` (the user's, then
 * the AI's empty one), a `token` per word, `end` with the run response; without it the run response
 * alone. A wrong key is HTTP 403 with FastAPI's `detail`.
 */
export async function startFakeLangflow(opts: { apiKey: string; flowId: string; answer: string }): Promise<FakeKeyedExternal> {
  const requests: RecordedExternalRequest[] = [];
  const fake: FakeKeyedExternal = { apiKey: opts.apiKey, url: '', requests, close: () => closeServer(server) };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.headers['x-api-key'] !== fake.apiKey) {
      res.writeHead(403, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ detail: 'Invalid or missing API key' }));
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method !== 'POST' || url.pathname !== `/api/v1/run/${opts.flowId}`) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ detail: 'Flow not found' }));
    }
    const session_id = body.session_id;
    const message = { text: opts.answer, sender: 'Machine', sender_name: 'AI', session_id };
    const result = {
      session_id,
      outputs: [{ inputs: { input_value: body.input_value }, outputs: [{ results: { message }, outputs: { message: { message: opts.answer, type: 'text' } }, messages: [{ message: opts.answer, sender: 'Machine', session_id }] }] }],
    };
    if (url.searchParams.get('stream') !== 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(result));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: string, data: unknown) => res.write(`${JSON.stringify({ event, data })}\n\n`);
    send('add_message', { sender: 'User', sender_name: 'User', session_id, text: body.input_value, id: 'u-1' });
    send('add_message', { sender: 'Machine', sender_name: 'AI', session_id, text: '', id: 'ai-1' });
    for (const w of wordsOf(opts.answer)) {
      send('token', { chunk: w, id: 'ai-1', timestamp: '2026-11-30 12:00:00 UTC' });
      await sleep(1);
    }
    send('end', { result });
    res.end();
  });
  fake.url = await listen(server);
  return fake;
}

/**
 * DashScope application completion: `POST /api/v1/apps/{app}/completion` with `Authorization:
 * Bearer <key>` and `X-DashScope-SSE: enable` streams SSE as DashScope does (`id:`, `event:result`,
 * a `:HTTP_STATUS/200` comment, `data:`), incremental: agent apps `output.text` per word (after
 * `thoughts` while `has_thoughts`), workflow apps `output.workflow_message`; `finish_reason` is the
 * string "null" until the last chunk ("stop"), which cites `references` as `doc_references`. The
 * `session_id` is a new one unless the request names one. A wrong key is HTTP 401 with DashScope's body.
 */
export async function startFakeDashscope(opts: { apiKey: string; appId: string; answer: string; thought?: string; references?: Array<{ index_id: string; doc_name: string }> }): Promise<FakeKeyedExternal> {
  const requests: RecordedExternalRequest[] = [];
  let sessions = 0;
  const fake: FakeKeyedExternal = { apiKey: opts.apiKey, url: '', requests, close: () => closeServer(server) };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${fake.apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ code: 'InvalidApiKey', message: 'Invalid API-key provided.', request_id: 'req-401' }));
    }
    if (req.method !== 'POST' || req.url !== `/api/v1/apps/${opts.appId}/completion` || req.headers['x-dashscope-sse'] !== 'enable') return void res.writeHead(404).end();
    const session_id = body.input?.session_id || `ds-session-${++sessions}`;
    const workflow = body.parameters?.flow_stream_mode === 'message_format';
    res.writeHead(200, { 'content-type': 'text/event-stream;charset=UTF-8' });
    let id = 0;
    const send = (output: Record<string, unknown>) =>
      res.write(`id:${++id}\nevent:result\n:HTTP_STATUS/200\ndata:${JSON.stringify({ output: { session_id, finish_reason: 'null', text: '', ...output }, usage: {}, request_id: 'req-1' })}\n\n`);
    if (!workflow && body.parameters?.has_thoughts && opts.thought) for (const w of wordsOf(opts.thought)) send({ thoughts: [{ thought: w }] });
    for (const w of wordsOf(opts.answer)) {
      send(workflow ? { workflow_message: { node_id: 'End_1', message: { role: 'assistant', content: w } }, text: undefined } : { text: w });
      await sleep(1);
    }
    // The last chunk carries the call's usage, per model, as DashScope's application API reports it.
    const usage = fakeUsage(body.input?.prompt ?? '', opts.answer);
    res.write(`id:${++id}\nevent:result\n:HTTP_STATUS/200\ndata:${JSON.stringify({
      output: { session_id, finish_reason: 'stop', text: '', ...(opts.references ? { doc_references: opts.references } : {}) },
      usage: { models: [{ model_id: 'qwen-plus', input_tokens: usage.input, output_tokens: usage.output }] },
      request_id: 'req-1',
    })}\n\n`);
    res.end();
  });
  fake.url = `${await listen(server)}/api/v1`;
  return fake;
}

/**
 * WeKnora (`/api/v1`, `X-API-Key`): `POST /sessions` opens a session (`{data: {id}}`, 201);
 * `POST /agent-chat/{session}` and `/knowledge-chat/{session}` stream gin's SSE events
 * (`event:message`, `data:` a JSON response with `response_type`): the agent's `agent_query`,
 * `thinking` and a `tool_call`, the chat's `references`, then one `answer` per word with `done` on the
 * last (`failWith`: an `error` event instead of the last words). An unknown session is 404, a wrong
 * key 401. `requests` holds the chat calls, `sessions` the opened sessions' requests.
 */
export async function startFakeWeknora(opts: { apiKey: string; answer: string; failWith?: string }): Promise<FakeKeyedExternal & { sessions: RecordedExternalRequest[] }> {
  const requests: RecordedExternalRequest[] = [];
  const sessions: RecordedExternalRequest[] = [];
  const fake = { apiKey: opts.apiKey, url: '', requests, sessions, close: () => closeServer(server) };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    const json = (status: number, o: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(o));
    if (req.headers['x-api-key'] !== fake.apiKey) {
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      return json(401, { success: false, error: 'Unauthorized: invalid API key' });
    }
    if (req.method === 'POST' && req.url === '/api/v1/sessions') {
      sessions.push({ path: req.url, headers: req.headers, body });
      return json(201, { success: true, data: { id: `wk-session-${sessions.length}`, title: body.title } });
    }
    const chat = /^\/api\/v1\/(agent-chat|knowledge-chat)\/(wk-session-(\d+))$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !chat) return json(404, { success: false, error: 'not found' });
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (Number(chat[3]) > sessions.length) return json(404, { success: false, error: 'session not found' });
    const id = `req-${requests.length}`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (o: Record<string, unknown>) => res.write(`event:message\ndata:${JSON.stringify({ id, session_id: chat[2], done: false, ...o })}\n\n`);
    if (chat[1] === 'agent-chat') {
      send({ response_type: 'agent_query', content: body.query });
      send({ response_type: 'thinking', content: 'Looking into it.' });
      send({ response_type: 'tool_call', content: '', data: { tool_name: 'knowledge_search', arguments: { query: body.query } } });
    } else send({ response_type: 'references', content: '', knowledge_references: [] });
    const words = wordsOf(opts.answer);
    for (const [i, w] of words.entries()) {
      if (opts.failWith && i === words.length - 1) {
        send({ response_type: 'error', content: opts.failWith, done: true });
        return void res.end();
      }
      send({ response_type: 'answer', content: w, done: i === words.length - 1 });
      await sleep(1);
    }
    res.end();
  });
  fake.url = `${await listen(server)}/api/v1`;
  return fake;
}

/**
 * DeerFlow's LangGraph API (`Authorization: Bearer <key>`): `POST /api/langgraph/threads` opens a
 * thread; `POST /api/langgraph/threads/{thread}/runs/stream` streams LangGraph's named SSE events:
 * `metadata`, `values` with the thread's state (earlier turns and the question), one `messages`
 * event per word (`[AIMessageChunk, metadata]`), then `values` with the AI message added, which the
 * thread keeps. `failWith`: an `error` event after the first words; `failedTask`: a `custom`
 * `task_failed` event and no AI text; `clarify`: an `ask_clarification` tool message instead of the
 * answer; `stallAfter`: that many words, then nothing until the client hangs up. An unknown thread is 404.
 */
export async function startFakeDeerflow(opts: { apiKey: string; answer: string; failWith?: string; failedTask?: string; clarify?: string; stallAfter?: number }): Promise<FakeKeyedExternal & { threads: Map<string, unknown[]> }> {
  const requests: RecordedExternalRequest[] = [];
  const threads = new Map<string, unknown[]>();
  const fake = { apiKey: opts.apiKey, url: '', requests, threads, close: () => closeServer(server) };
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    const json = (status: number, o: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(o));
    if (req.headers.authorization !== `Bearer ${fake.apiKey}`) {
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      return json(401, { detail: 'Invalid authentication credentials' });
    }
    if (req.method === 'POST' && req.url === '/api/langgraph/threads') {
      const thread_id = `df-thread-${threads.size + 1}`;
      threads.set(thread_id, []);
      return json(200, { thread_id, created_at: '2026-11-30T12:00:00Z', metadata: body.metadata ?? {}, status: 'idle', values: null });
    }
    const run = /^\/api\/langgraph\/threads\/([^/]+)\/runs\/stream$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !run) return json(404, { detail: 'Not Found' });
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    const state = threads.get(run[1]);
    if (!state) return json(404, { detail: `Thread ${run[1]} not found` });
    const turn = requests.length;
    state.push({ type: 'human', id: `human-${turn}`, content: body.input?.messages?.at(-1)?.content ?? '' });
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send('metadata', { run_id: `run-${turn}`, attempt: 1 });
    send('values', { messages: state, title: null });
    if (opts.failedTask) {
      send('custom', { type: 'task_failed', task_id: 'research-1', error: opts.failedTask });
      send('values', { messages: state });
      return void res.end();
    }
    if (opts.clarify) {
      state.push({ type: 'ai', id: `ai-${turn}`, content: '', tool_calls: [{ name: 'ask_clarification', args: {}, id: 'call-1' }] });
      state.push({ type: 'tool', id: `tool-${turn}`, name: 'ask_clarification', content: opts.clarify, tool_call_id: 'call-1' });
      send('messages', [{ type: 'tool', id: `tool-${turn}`, name: 'ask_clarification', content: opts.clarify }, { langgraph_node: 'tools' }]);
      send('values', { messages: state });
      return void res.end();
    }
    const words = wordsOf(opts.answer);
    for (const [i, w] of words.entries()) {
      if (opts.failWith && i === 2) {
        send('error', { error: 'RuntimeError', message: opts.failWith });
        return void res.end();
      }
      if (opts.stallAfter !== undefined && i === opts.stallAfter) return void (await new Promise((r) => res.once('close', r)));
      send('messages', [{ type: 'AIMessageChunk', id: `ai-${turn}`, content: w }, { langgraph_node: 'lead_agent', run_id: `run-${turn}` }]);
      await sleep(1);
    }
    state.push({ type: 'ai', id: `ai-${turn}`, content: opts.answer });
    send('values', { messages: state });
    res.end();
  });
  fake.url = await listen(server);
  return fake;
}
