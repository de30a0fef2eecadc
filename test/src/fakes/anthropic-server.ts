import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listen, readBody } from './http-util.js';
import { NativeScript, pace, textPieces, wordCount, type NativeModelFake } from './native-model-script.js';

/**
 * A fake Anthropic Messages API (`POST /v1/messages`) speaking the real wire format: the JSON
 * message, or the SSE events `message_start`, `content_block_start`, `content_block_delta`
 * (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`), `content_block_stop`,
 * `message_delta` and `message_stop`. Like the real API, it checks the key (`x-api-key` or a bearer token, 401
 * `authentication_error`) and refuses (400) a request whose assistant turn with `tool_use` blocks
 * does not carry back, unchanged, the thinking block it came with.
 */

interface Block {
  type: string;
  [k: string]: unknown;
}

export interface FakeAnthropic extends NativeModelFake {}

export async function startFakeAnthropic(opts: { apiKey?: string } = {}): Promise<FakeAnthropic> {
  const script = new NativeScript();
  /** Signature → the thinking it signed, for every thinking block the fake handed out. */
  const signed = new Map<string, string>();
  /** tool_use id → the signature of the thinking block answered with it. */
  const thinkingOfCall = new Map<string, string>();
  let ids = 0;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${++ids}` });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, type: string, message: string) => send(res, status, { type: 'error', error: { type, message } });

  /** The real API's rule: an assistant turn's tool calls come back with the thinking that preceded them. */
  function thinkingProblem(body: Record<string, unknown>): string | null {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    for (const m of messages) {
      if (m?.role !== 'assistant' || !Array.isArray(m.content)) continue;
      const blocks: Block[] = m.content;
      for (const b of blocks) {
        if (b.type !== 'tool_use') continue;
        const expected = thinkingOfCall.get(String(b.id));
        if (!expected) continue;
        const thinking = blocks.find((t) => t.type === 'thinking');
        if (!thinking) return 'messages: assistant message with tool_use must start with the thinking block it was generated with';
        if (thinking.signature !== expected || signed.get(expected) !== thinking.thinking) return 'messages: Invalid `signature` in `thinking` block';
        if (blocks.indexOf(thinking) !== 0) return 'messages: thinking block must come first';
      }
    }
    return null;
  }

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/messages') return error(res, 404, 'not_found_error', `no route ${req.method} ${req.url}`);
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    // The key as `x-api-key`, or as a bearer token (how the official SDK's current versions send it).
    if (opts.apiKey && req.headers['x-api-key'] !== opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) return error(res, 401, 'authentication_error', 'invalid x-api-key');
    if (typeof req.headers['anthropic-version'] !== 'string') return error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    if (typeof body.max_tokens !== 'number') return error(res, 400, 'invalid_request_error', 'max_tokens: Field required');
    const problem = thinkingProblem(body);
    if (problem) {
      script.record('/v1/messages', req.headers, body);
      return error(res, 400, 'invalid_request_error', problem);
    }
    const answer = script.next('/v1/messages', req.headers, body);
    if (answer.error) return error(res, answer.error.status, answer.error.status === 401 ? 'authentication_error' : 'api_error', answer.error.message);

    const id = `msg_${++ids}`;
    const blocks: Block[] = [];
    if (answer.thinking) {
      const signature = `sig_${ids}_${Buffer.from(answer.thinking).toString('base64url').slice(0, 16)}`;
      signed.set(signature, answer.thinking);
      blocks.push({ type: 'thinking', thinking: answer.thinking, signature });
    }
    if (answer.text) blocks.push({ type: 'text', text: answer.text });
    for (const call of answer.toolCalls ?? []) {
      const callId = `toolu_${++ids}`;
      const thinking = blocks.find((b) => b.type === 'thinking');
      if (thinking) thinkingOfCall.set(callId, String(thinking.signature));
      blocks.push({ type: 'tool_use', id: callId, name: call.name, input: call.arguments });
    }
    const stopReason = answer.toolCalls?.length ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: wordCount(body.messages) + wordCount(body.system), output_tokens: wordCount(answer.text) + wordCount(answer.thinking), cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    const message = { id, type: 'message', role: 'assistant', model: body.model, content: blocks, stop_reason: stopReason, stop_sequence: null, usage };
    if (!body.stream) return send(res, 200, message);

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    event('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
    event('ping', { type: 'ping' });
    for (const [index, b] of blocks.entries()) {
      if (b.type === 'thinking') {
        event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        for (const piece of textPieces(String(b.thinking), answer.chunkSize)) {
          await pace(answer);
          event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
        }
        event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } });
      } else if (b.type === 'text') {
        event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        for (const piece of textPieces(String(b.text), answer.chunkSize)) {
          await pace(answer);
          event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
        }
      } else {
        event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
        const json = JSON.stringify(b.input);
        // The arguments in two fragments, as the API streams partial JSON.
        const half = Math.ceil(json.length / 2);
        for (const part of [json.slice(0, half), json.slice(half)]) event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } });
      }
      event('content_block_stop', { type: 'content_block_stop', index });
    }
    event('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    event('message_stop', { type: 'message_stop' });
    res.end();
  });
  const url = await listen(server);
  return { url, requests: script.requests, script: (...r) => script.script(...r), setDefault: (r) => script.setDefault(r), close: () => closeServer(server) };
}
