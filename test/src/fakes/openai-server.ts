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
  /** Called right after each streamed content delta is written: its 1-based index and `performance.now()`. */
  onDelta?: (index: number, at: number) => void;
  /**
   * Pace this stream on the server's shared ticker instead of a timer of its own: one content delta
   * every `tickMs` (first one a period after the start), one timer for all such streams with the
   * streams spread over the period, so thousands of slow streams stay cheap. Text only: tool calls,
   * `tokensPerSecond` and `dropAfterChunks` are ignored.
   */
  tickMs?: number;
  /** With `tickMs`: after the text the stream stays open, silent, until `release()` ends it. */
  holdOpen?: boolean;
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
  /** Chat-completion requests being answered now (received, response not yet ended or cut). */
  readonly inFlight: number;
  /** Ends every stream paced by the shared ticker (`tickMs`) now: finish reason, usage, `[DONE]`. */
  release(): void;
  /** Bodies of `/v1/embeddings` and `/v1/rerank` requests, in order. */
  embeddingRequests: Array<{ model?: string; input?: unknown; encoding_format?: string }>;
  rerankRequests: Array<{ model?: string; query?: string; documents?: string[]; top_n?: number }>;
  /** Answer `/v1/embeddings` (or `/v1/rerank`) with this HTTP error until set back to undefined. */
  failEmbeddings(error: { status: number; message: string } | undefined): void;
  failRerank(error: { status: number; message: string } | undefined): void;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  port?: number;
  /** The address to listen on; default 127.0.0.1 (a container listens on 0.0.0.0). */
  host?: string;
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

/** Dimensions of the fake embeddings. */
export const FAKE_EMBEDDING_DIMENSIONS = 64;

/**
 * A deterministic embedding: each lowercase word adds 1 to the dimension its hash picks, so texts
 * sharing words are near each other and a test can predict what a search finds.
 */
export function fakeEmbedding(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let h = 2166136261;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
    v[h % FAKE_EMBEDDING_DIMENSIONS] += 1;
  }
  // A text without words still gets a vector (OpenAI never answers a zero vector).
  if (!v.some((x) => x !== 0)) v[0] = 1;
  return v;
}

/** The fake rerank score: the share of the query's distinct words that the document contains. */
export function fakeRelevance(query: string, document: string): number {
  const words = (t: string) => new Set(t.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  const q = words(query);
  const d = words(document);
  let shared = 0;
  for (const w of q) if (d.has(w)) shared++;
  return q.size ? shared / q.size : 0;
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

/** Streams paced by one shared timer (`FakeResponse.tickMs`). */
interface TickedStream {
  /** Writes the next delta; false once the text is out. */
  step(): boolean;
  /** Finishes the response (finish reason, usage, [DONE]). */
  finish(): void;
  held: boolean;
}

const TICKER_SLOTS = 20;

/** One timer for every stream of one period; each stream is serviced once per period, spread over `TICKER_SLOTS` slots. */
class Ticker {
  private readonly slots: Set<TickedStream>[] = Array.from({ length: TICKER_SLOTS }, () => new Set());
  private cursor = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(periodMs: number) {
    this.timer = setInterval(() => this.tick(), Math.max(1, periodMs / TICKER_SLOTS));
  }

  add(s: TickedStream): () => void {
    const slot = this.slots[this.cursor];
    slot.add(s);
    return () => void slot.delete(s);
  }

  private tick(): void {
    this.cursor = (this.cursor + 1) % TICKER_SLOTS;
    for (const s of this.slots[this.cursor]) {
      if (s.held) continue;
      if (!s.step()) s.finish();
    }
  }

  /** Finishes every stream now. */
  release(): void {
    for (const slot of this.slots) for (const s of slot) s.finish();
  }

  stop(): void {
    clearInterval(this.timer);
  }
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
  let inFlight = 0;
  const record = options.record ?? true;
  const tickers = new Map<number, Ticker>();
  // Scripted delays end with the fake: a long one (a model that answers after the test's deadline)
  // would otherwise keep the test's process alive until it ran out.
  const closing = new AbortController();
  const delay = (ms: number) => sleep(ms, undefined, { signal: closing.signal });
  /** Deltas of the texts ticked streams are serving (few distinct texts, thousands of streams). */
  const piecesCache = new Map<string, string[]>();

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
    if (spec.delayFirstTokenMs && !body.stream) await delay(spec.delayFirstTokenMs);
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

    if (spec.tickMs && spec.tickMs > 0) return tickedStream(res, body, spec, spec.tickMs, { id, created, model, text, finishReason, usage });
    await stream(res, body, spec, { id, created, model, text, toolCalls, finishReason, usage });
  }

  function cachedPieces(text: string, chunkSize: number | undefined): string[] {
    const key = `${chunkSize ?? 0}\u0000${text}`;
    let p = piecesCache.get(key);
    if (!p) {
      if (piecesCache.size >= 16) piecesCache.delete(piecesCache.keys().next().value!);
      p = pieces(text, chunkSize);
      piecesCache.set(key, p);
    }
    return p;
  }

  /** A text stream written by the shared ticker of its period (see `FakeResponse.tickMs`). */
  function tickedStream(
    res: ServerResponse,
    body: ChatRequestBody,
    spec: FakeResponse,
    periodMs: number,
    c: { id: string; created: number; model: string; text: string; finishReason: string; usage: unknown },
  ): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    const includeUsage = body.stream_options?.include_usage === true;
    const head = `data: {"id":${JSON.stringify(c.id)},"object":"chat.completion.chunk","created":${c.created},"model":${JSON.stringify(c.model)},"system_fingerprint":"fp_fake","choices":[{"index":0,"delta":`;
    const tail = `,"logprobs":null,"finish_reason":`;
    const usageNull = includeUsage ? ',"usage":null' : '';
    const write = (delta: unknown, finish: string | null = null) =>
      res.write(`${head}${JSON.stringify(delta)}${tail}${JSON.stringify(finish)}}]${usageNull}}\n\n`);
    const all = cachedPieces(c.text, spec.chunkSize);
    let next = 0;
    let ticker = tickers.get(periodMs);
    if (!ticker) {
      ticker = new Ticker(periodMs);
      tickers.set(periodMs, ticker);
    }
    let done = false;
    const s: TickedStream = {
      held: false,
      step() {
        if (next >= all.length) return false;
        write({ content: all[next++] });
        spec.onDelta?.(next, performance.now());
        if (next >= all.length && spec.holdOpen) s.held = true;
        return true;
      },
      finish() {
        if (done) return;
        done = true;
        remove();
        if (res.destroyed) return;
        write({}, c.finishReason);
        if (includeUsage) res.write(`data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, system_fingerprint: 'fp_fake', choices: [], usage: c.usage })}\n\n`);
        res.write('data: [DONE]\n\n');
        res.end();
      },
    };
    const remove = ticker.add(s);
    res.once('close', () => {
      done = true;
      remove();
    });
    // The SDK's stream helper needs the role on the first delta.
    write({ role: 'assistant', content: '', refusal: null });
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

    /** Writes one SSE event; returns false once the scripted drop has happened. `delta`: a content delta's index. */
    const emit = async (payload: unknown, paced: boolean, delta?: number): Promise<boolean> => {
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
      if (paced && gapMs > 0) await delay(gapMs);
      res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
      if (delta !== undefined) spec.onDelta?.(delta, performance.now());
      sent++;
      return true;
    };

    if (spec.delayFirstTokenMs) await delay(spec.delayFirstTokenMs);
    // Without a paced stream, batch the writes into as few TCP segments as possible.
    if (gapMs === 0) res.socket?.cork();
    try {
      // The SDK's stream helper needs the role on the first delta.
      if (!(await emit(chunk({ role: 'assistant', content: '', refusal: null }), false))) return;
      let index = 0;
      for (const piece of pieces(c.text, spec.chunkSize)) if (!(await emit(chunk({ content: piece }), true, ++index))) return;
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

  const embeddingRequests: FakeOpenAI['embeddingRequests'] = [];
  const rerankRequests: FakeOpenAI['rerankRequests'] = [];
  let embeddingsError: { status: number; message: string } | undefined;
  let rerankError: { status: number; message: string } | undefined;

  /** OpenAI's `/v1/embeddings`: float arrays, or base64 of little-endian float32 when asked. */
  async function embeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: { model?: string; input?: unknown; encoding_format?: string };
    try {
      body = JSON.parse((await readBody(req)).toString('utf8'));
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.');
    }
    embeddingRequests.push(body);
    if (embeddingsError) return sendError(res, embeddingsError.status, embeddingsError.message, 'server_error');
    const inputs = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input : null;
    if (!inputs || inputs.some((i) => typeof i !== 'string')) return sendError(res, 400, "'input' must be a string or an array of strings");
    const data = (inputs as string[]).map((text, index) => {
      const vector = fakeEmbedding(text);
      const embedding = body.encoding_format === 'base64' ? Buffer.from(Float32Array.from(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    const tokens = (inputs as string[]).reduce((n, t) => n + countTokens(t), 0);
    sendJson(res, 200, { object: 'list', data, model: body.model ?? 'fake-embedding', usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }

  /** The Jina/Cohere-style `/v1/rerank` that LangBot calls on OpenAI-compatible gateways. */
  async function rerankDocuments(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: { model?: string; query?: string; documents?: string[]; top_n?: number };
    try {
      body = JSON.parse((await readBody(req)).toString('utf8'));
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.');
    }
    rerankRequests.push(body);
    if (rerankError) return sendError(res, rerankError.status, rerankError.message, 'server_error');
    if (typeof body.query !== 'string' || !Array.isArray(body.documents)) return sendError(res, 400, "'query' and 'documents' are required");
    const results = body.documents
      .map((doc, index) => ({ index, relevance_score: fakeRelevance(body.query!, String(doc)) }))
      .sort((a, b) => b.relevance_score - a.relevance_score)
      .slice(0, body.top_n ?? body.documents.length);
    // Jina's answer counts the query and documents as `usage.total_tokens`.
    const tokens = countTokens(body.query) + body.documents.reduce((n: number, d) => n + countTokens(String(d)), 0);
    sendJson(res, 200, { model: body.model ?? 'fake-rerank', results, usage: { total_tokens: tokens } });
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      req.resume();
      return sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      inFlight++;
      res.once('close', () => inFlight--);
      completions(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, `fake server failure: ${String(err)}`, 'server_error');
        else res.destroy();
      });
      return;
    }
    if (req.method === 'POST' && (path === '/v1/embeddings' || path === '/v1/rerank')) {
      (path === '/v1/embeddings' ? embeddings(req, res) : rerankDocuments(req, res)).catch((err: unknown) => {
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

  const base = await listen(server, options.port, options.host);
  return {
    url: `${base}/v1`,
    requests,
    script: (...responses) => void queue.push(...responses),
    setDefault: (response) => {
      fallback = response;
    },
    get inFlight() {
      return inFlight;
    },
    release: () => {
      for (const t of tickers.values()) t.release();
    },
    embeddingRequests,
    rerankRequests,
    failEmbeddings: (error) => {
      embeddingsError = error;
    },
    failRerank: (error) => {
      rerankError = error;
    },
    close: () => {
      closing.abort();
      for (const t of tickers.values()) t.stop();
      tickers.clear();
      return closeServer(server);
    },
  };
}
