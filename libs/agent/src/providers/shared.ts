import type { ContentPart, LlmMessage, ToolCall } from '@conveyor/contracts';
import { stripThink } from '../think.js';
import { ProviderAnswerError, ProviderHttpError, ProviderTimeoutError, type ProviderCall } from './types.js';

// What the native providers' mappings share: reading the loop's OpenAI-shaped history.

/** A tool call's arguments as an object (the native APIs take objects, not JSON text); `{}` when they are not one. */
export function toolArguments(call: ToolCall): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(call.function.arguments || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : {};
  } catch {
    return {};
  }
}

/**
 * The text of an assistant turn as it goes back to a native API: the `<think>` rendering shown to the
 * user is dropped (the reasoning goes back as the provider's own blocks, when it needs it).
 */
export function assistantText(message: LlmMessage): string {
  const text = typeof message.content === 'string' ? message.content : (message.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');
  return text.includes('</think>') ? stripThink(text) : text;
}

/** The content's parts, a plain string being one text part. */
export function partsOf(content: LlmMessage['content']): ContentPart[] {
  if (content == null || content === '') return [];
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** `data:<mime>;base64,<data>` split, or null for any other URL. */
export function dataUrl(url: string): { mimeType: string; data: string } | null {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mimeType: match[1], data: match[2] } : null;
}

/** The name of each tool call in the history by its id: a tool result names its function in the native APIs. */
export function toolNamesById(messages: readonly LlmMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name);
  return names;
}

/** A tool result's text (a native API takes text; an image part is named, not inlined, where it cannot take one). */
export function toolResultText(message: LlmMessage): string {
  return partsOf(message.content).map((p) => (p.type === 'text' ? p.text : `[image ${p.image_url.url.startsWith('data:') ? 'inline' : p.image_url.url}]`)).join('');
}

/** The system messages joined, as the native APIs take one system instruction. */
export function systemText(messages: readonly LlmMessage[]): string {
  return messages.filter((m) => m.role === 'system').map((m) => partsOf(m.content).map((p) => (p.type === 'text' ? p.text : '')).join('')).filter(Boolean).join('\n\n');
}

/** Reads a streamed body as lines (NDJSON, SSE), bounded so a line without end cannot grow without limit. */
export async function* lines(body: ReadableStream<Uint8Array>, maxLineChars = 16 * 1024 * 1024): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      yield buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
    }
    if (buffer.length > maxLineChars) throw new Error(`a streamed line longer than ${maxLineChars} characters`);
  }
  buffer += decoder.decode();
  if (buffer) yield buffer;
}

/** The error an HTTP answer carries (`{error: {message}}`, `{error: "..."}`), cut short for logs and users. */
export function errorMessageOf(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === 'object' && body !== null && 'error' in body) {
      const error = body.error;
      if (typeof error === 'string') return error.slice(0, 1000);
      if (typeof error === 'object' && error !== null && 'message' in error && typeof error.message === 'string') return error.message.slice(0, 1000);
    }
  } catch {
    // Not JSON: the text itself.
  }
  return text.slice(0, 1000);
}

/**
 * POSTs JSON to a provider reached without an SDK. The model's timeout bounds the wait for the
 * answer's headers (a stream may then run as long as it streams); a non-2xx answer throws with the
 * provider's message and status, the key never in it.
 */
export async function postJson(url: string, headers: Record<string, string>, body: unknown, call: Pick<ProviderCall, 'pool' | 'model' | 'signal'>): Promise<Response> {
  const timer = new AbortController();
  const timeout = setTimeout(() => timer.abort(new ProviderTimeoutError(call.model.timeoutMs)), call.model.timeoutMs);
  let res: Response;
  try {
    res = await call.pool.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: call.signal ? AbortSignal.any([call.signal, timer.signal]) : timer.signal });
  } catch (err) {
    if (timer.signal.aborted && !call.signal?.aborted) throw timer.signal.reason;
    throw err;
  } finally {
    clearTimeout(timeout);
  }
  if (!res.ok) {
    const text = await res.text().catch(() => '');
    throw new ProviderHttpError(res.status, `${res.status} ${errorMessageOf(text) || res.statusText}`);
  }
  if (!res.body) throw new ProviderHttpError(res.status, `${res.status} with an empty body`);
  return res;
}

/** A URL's base without trailing slashes and without the given API suffixes (an OpenAI-style `/v1` pasted by habit). */
export function apiRoot(baseUrl: string, suffixes: readonly string[]): string {
  let root = baseUrl.replace(/\/+$/, '');
  for (const s of suffixes) if (root.endsWith(s)) root = root.slice(0, -s.length);
  return root;
}

/** An answer's JSON body, read no further than `maxBytes` (a misbehaving endpoint cannot fill the memory). */
export async function boundedJson(res: Response, maxBytes: number): Promise<unknown> {
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for await (const chunk of res.body!) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) throw new ProviderAnswerError(`an answer over ${maxBytes} bytes`);
    text += decoder.decode(chunk, { stream: true });
  }
  text += decoder.decode();
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderAnswerError('an answer that is not JSON');
  }
}

/** Answers to one embedding request are read up to this size: 64 texts of 3072 dimensions are about 5 MB. */
export const MAX_EMBEDDINGS_ANSWER_BYTES = 64 * 1024 * 1024;

/** `value` as vectors of finite numbers, or the reason it is not. */
export function vectorsOf(value: unknown, count: number, what: string): number[][] {
  if (!Array.isArray(value)) throw new ProviderAnswerError(`${what}: no vectors in the answer`);
  if (value.length !== count) throw new ProviderAnswerError(`${what}: ${value.length} vectors for ${count} texts`);
  return value.map((v, i) => {
    if (!Array.isArray(v) || !v.every((x): x is number => typeof x === 'number')) throw new ProviderAnswerError(`${what}: vector ${i} is not a list of numbers`);
    return v;
  });
}
