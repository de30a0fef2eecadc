import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeServer, listen, readBody } from './http-util.js';

/**
 * A fake OpenAI-compatible server speaking the real Chat Completions wire format, including SSE
 * streaming with tool-call deltas, so the `openai` SDK and our runner can be exercised end to end.
 */

export interface FakeToolCall {
  name: string;
  /** The JSON arguments text, streamed in fragments. */
  arguments: string;
  id?: string;
}

export interface FakeResponse {
  text?: string;
  toolCalls?: FakeToolCall[];
  /** Answer with this HTTP error (OpenAI's error body) instead of a completion. */
  error?: { status: number; message: string; type?: string; code?: string | null };
  /** Wait before the first token (streaming) or before the whole response. */
  delayFirstTokenMs?: number;
  /** Pace streamed deltas; omitted means as fast as possible. */
  tokensPerSecond?: number;
  /** Characters per streamed delta (content and tool arguments); default: one word per delta. */
  chunkSize?: number;
  /** Destroy the socket after this many SSE `data:` events (or before a non-streamed answer). */
  dropAfterChunks?: number;
  finishReason?: string;
  /** Serve exactly these bytes instead of a well-formed completion: malformed SSE, broken JSON, odd statuses. */
  raw?: RawModelResponse;
}

export interface RawModelResponse {
  /** Default 200. */
  status?: number;
  /** Default `text/event-stream`. */
  contentType?: string;
  /** Written one after another, each as its own write. */
  chunks: string[];
  /** `end` closes the response normally (default); `destroy` cuts the connection after the last chunk. */
  ending?: 'end' | 'destroy';
}

export type FakeResponder = (requestBody: ChatRequestBody, n: number) => FakeResponse | Promise<FakeResponse>;

export interface ChatRequestBody {
  model?: string;
  messages?: { role: string; content?: unknown; [k: string]: unknown }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [k: string]: unknown;
}

export interface RecordedRequest {
  /** 1-based index among chat-completion requests. */
  n: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: ChatRequestBody;
}

export interface FakeOpenAI {
  /** Base URL for the SDK, ending in `/v1`. */
  url: string;
  requests: RecordedRequest[];
  /** Queue responses for the next requests, in order; each entry is used once. */
  script(...responses: (FakeResponse | FakeResponder)[]): void;
  /** What to answer once the queue is empty. */
  setDefault(response: FakeResponse | FakeResponder): void;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  port?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get 401. */
  apiKey?: string;
  /** Keep request bodies in `requests` (turn off for long benchmarks). Default true. */
  record?: boolean;
}

function lastUserText(body: ChatRequestBody): string {
  const user = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
  if (!user) return '';
  if (typeof user.content === 'string') return user.content;
  if (Array.isArray(user.content)) {
    return user.content
      .map((p: { type?: string; text?: string }) => (p && p.type === 'text' ? (p.text ?? '') : ''))
      .join('');
  }
  return '';
}

export const echoResponder: FakeResponder = (body) => ({ text: `Echo: ${lastUserText(body)}` });

/** Splits text into streamed deltas: fixed-size pieces, or words with their trailing whitespace. */
function pieces(text: string, chunkSize: number | undefined): string[] {
  if (text === '') return [];
  if (chunkSize && chunkSize > 0) {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += chunkSize) out.push(text.slice(i, i + chunkSize));
    return out;
  }
  return text.match(/\s*\S+\s*|\s+/g) ?? [text];
}

/** Rough token count, cheap and deterministic; good enough for usage fields. */
function countTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function promptTokens(body: ChatRequestBody): number {
  let n = 0;
  for (const m of body.messages ?? []) n += countTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
  return n;
}

let idCounter = 0;
const nextId = (prefix: string) => `${prefix}-${Date.now().toString(36)}${(idCounter++).toString(36)}`;

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, type = 'invalid_request_error', code: string | null = null) {
  sendJson(res, status, { error: { message, type, param: null, code } });
}

function sendRaw(res: ServerResponse, raw: RawModelResponse): void {
  res.writeHead(raw.status ?? 200, { 'Content-Type': raw.contentType ?? 'text/event-stream', 'Cache-Control': 'no-cache' });
  for (const chunk of raw.chunks) res.write(chunk);
  if (raw.ending === 'destroy') res.destroy();
  else res.end();
}

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const queue: (FakeResponse | FakeResponder)[] = [];
  let fallback: FakeResponse | FakeResponder = echoResponder;
  let chatCount = 0;
  const record = options.record ?? true;

  async function completions(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: ChatRequestBody;
    try {
      body = JSON.parse((await readBody(req)).toString('utf8'));
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.');
    }
    const n = ++chatCount;
    if (record) requests.push({ n, method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });

    const entry = queue.length > 0 ? queue.shift()! : fallback;
    const spec = typeof entry === 'function' ? await entry(body, n) : entry;
    if (spec.delayFirstTokenMs && !body.stream) await sleep(spec.delayFirstTokenMs);
    if (spec.raw) return sendRaw(res, spec.raw);
    if (spec.error) return sendError(res, spec.error.status, spec.error.message, spec.error.type, spec.error.code ?? null);
    if (spec.dropAfterChunks !== undefined && !body.stream) {
      res.socket?.destroy();
      return;
    }
    const model = body.model ?? 'fake-model';
    // A spec with neither text nor tool calls (e.g. only a delay) still answers with the echo.
    const text = spec.text ?? (spec.toolCalls?.length ? '' : `Echo: ${lastUserText(body)}`);
    const toolCalls = (spec.toolCalls ?? []).map((t, i) => ({ ...t, id: t.id ?? `call_${n}_${i}` }));
    const finishReason = spec.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    const usage = {
      prompt_tokens: promptTokens(body),
      completion_tokens: countTokens(text) + toolCalls.length,
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const id = nextId('chatcmpl');
    const created = Math.floor(Date.now() / 1000);

    if (!body.stream) {
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text === '' && toolCalls.length > 0 ? null : text,
              refusal: null,
              ...(toolCalls.length > 0
                ? {
                    tool_calls: toolCalls.map((t) => ({
                      id: t.id,
                      type: 'function',
                      function: { name: t.name, arguments: t.arguments },
                    })),
                  }
                : {}),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage,
      });
    }

    await stream(res, body, spec, { id, created, model, text, toolCalls, finishReason, usage });
  }

  async function stream(
    res: ServerResponse,
    body: ChatRequestBody,
    spec: FakeResponse,
    c: {
      id: string;
      created: number;
      model: string;
      text: string;
      toolCalls: Required<FakeToolCall>[];
      finishReason: string;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    },
  ): Promise<void> {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    res.flushHeaders();
    const includeUsage = body.stream_options?.include_usage === true;
    const gapMs = spec.tokensPerSecond && spec.tokensPerSecond > 0 ? 1000 / spec.tokensPerSecond : 0;
    let sent = 0;
    let dropped = false;

    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: c.id,
      object: 'chat.completion.chunk',
      created: c.created,
      model: c.model,
      system_fingerprint: 'fp_fake',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    });

    /** Writes one SSE event; returns false once the scripted drop has happened. */
    const emit = async (payload: unknown, paced: boolean): Promise<boolean> => {
      if (dropped || res.destroyed) return false;
      if (spec.dropAfterChunks !== undefined && sent >= spec.dropAfterChunks) {
        dropped = true;
        // Flush what was already written, then close the connection mid-body: the client gets the
        // first chunks and then a terminated stream, like an upstream that died.
        const socket = res.socket;
        if (socket) {
          if (gapMs === 0) socket.uncork();
          socket.end();
        }
        return false;
      }
      if (paced && gapMs > 0) await sleep(gapMs);
      res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
      sent++;
      return true;
    };

    if (spec.delayFirstTokenMs) await sleep(spec.delayFirstTokenMs);
    // Without a paced stream, batch the writes into as few TCP segments as possible.
    if (gapMs === 0) res.socket?.cork();
    try {
      // The SDK's stream helper needs the role on the first delta.
      if (!(await emit(chunk({ role: 'assistant', content: '', refusal: null }), false))) return;
      for (const piece of pieces(c.text, spec.chunkSize)) if (!(await emit(chunk({ content: piece }), true))) return;
      for (const [index, call] of c.toolCalls.entries()) {
        const first = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
        if (!(await emit(chunk({ tool_calls: [first] }), true))) return;
        for (const frag of pieces(call.arguments, spec.chunkSize ?? 8)) {
          if (!(await emit(chunk({ tool_calls: [{ index, function: { arguments: frag } }] }), true))) return;
        }
      }
      if (!(await emit(chunk({}, c.finishReason), false))) return;
      if (includeUsage) {
        const usageChunk = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, system_fingerprint: 'fp_fake', choices: [], usage: c.usage };
        if (!(await emit(usageChunk, false))) return;
      }
      if (!(await emit('[DONE]', false))) return;
      res.end();
    } finally {
      if (gapMs === 0 && !dropped && !res.destroyed) res.socket?.uncork();
    }
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      req.resume();
      return sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      completions(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, `fake server failure: ${String(err)}`, 'server_error');
        else res.destroy();
      });
      return;
    }
    req.resume();
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', created: 1767225600, owned_by: 'conveyor-test' }],
      });
    }
    sendError(res, 404, `Unknown request URL: ${req.method} ${path}.`, 'invalid_request_error', 'unknown_url');
  });

  const base = await listen(server, options.port);
  return {
    url: `${base}/v1`,
    requests,
    script: (...responses) => void queue.push(...responses),
    setDefault: (response) => {
      fallback = response;
    },
    close: () => closeServer(server),
  };
}
