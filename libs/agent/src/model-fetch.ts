import { STATUS_CODES } from 'node:http';
import { pipeline, type Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import { Agent, request, type Dispatcher } from 'undici';

/** What the `openai` and `@anthropic-ai/sdk` SDKs call to send a request (their `fetch` option). */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Redirects followed, as many as fetch follows. */
const MAX_REDIRECTS = 20;

/** The content codings fetch decodes, by `Content-Encoding` token. */
const DECODERS: Partial<Record<string, () => Transform>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/** The methods undici's `request` names; a request with another goes to the fallback. */
const METHODS: ReadonlySet<string> = new Set<Dispatcher.HttpMethod>(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const isMethod = (method: string): method is Dispatcher.HttpMethod => METHODS.has(method);

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for model calls: the request goes out through undici's `request` on `dispatcher`, and the
 * answer comes back as a WHATWG `Response` whose body streams as it arrives.
 *
 * Node's built-in fetch runs the Fetch standard's whole algorithm on every call (request and header
 * objects with their guards, the fetch steps, a web stream per body); through the SDK that is more
 * than half the client-side CPU of a model call, which is every run's. What the SDK relies on is
 * kept: the caller's AbortSignal (an abort rejects with an `AbortError`), redirects followed (an
 * `Authorization` header is dropped on a cross-origin hop), compressed answers asked for and decoded
 * as fetch does, and connection errors the SDK tells apart (a timeout's message says so). Requests
 * this does not take a shortcut for (a `Request` object, a streamed or form body: uploads) go to
 * `fallback`.
 */
export function createModelFetch(dispatcher: Dispatcher = new Agent(), fallback: FetchFunction = globalThis.fetch): FetchFunction {
  return async (input, init = {}) => {
    const body = init.body;
    const method = init.method ?? 'GET';
    if (input instanceof Request || !isMethod(method) || !(body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array)) {
      return fallback(input, init);
    }
    const headers = headerRecord(init.headers);
    headers['accept-encoding'] ??= 'gzip, deflate, br';
    const answer = await request(input, {
      method,
      headers,
      body: body ?? undefined,
      signal: init.signal ?? undefined,
      dispatcher,
      maxRedirections: MAX_REDIRECTS,
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
    }
    // undici does not pass the reason phrase on; the standard one stands in for it.
    const answerInit = { status: answer.statusCode, statusText: STATUS_CODES[answer.statusCode] ?? '', headers: responseHeaders };
    if (method === 'HEAD' || NULL_BODY_STATUSES.has(answer.statusCode)) {
      answer.body.resume();
      return new Response(null, answerInit);
    }
    return new Response(ReadableStream.from(decoded(answer.body, responseHeaders.get('content-encoding'))), answerInit);
  };
}

/** The request's headers as one record, lower-cased names; repeated values joined as Headers joins them. */
function headerRecord(init: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  // The SDKs pass a Headers already: read it as it is rather than copy it first.
  (init instanceof Headers ? init : new Headers(init)).forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/**
 * The body with its content codings undone, last applied first; an unknown coding leaves the body as
 * sent, as fetch leaves it.
 */
function decoded(body: Readable, contentEncoding: string | null): Readable {
  const codings = (contentEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c && c !== 'identity').reverse();
  const decoders = codings.map((c) => DECODERS[c]);
  if (decoders.length === 0 || decoders.some((d) => d === undefined)) return body;
  // pipeline destroys every stage when one fails, so a broken stream errors the body the SDK reads.
  let out: Readable = body;
  for (const make of decoders) if (make) out = pipeline(out, make(), () => {});
  return out;
}
