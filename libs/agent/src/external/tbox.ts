import { ExternalReply, ExternalRunnerError, parseEvent, requestSignal, type ExternalImage, type ExternalInput, type ExternalResult } from './common.js';
import { sseMessages } from './stream-parsers.js';
import { str, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.tbox-app-api` (Ant Group's Tbox / 百宝箱 apps). */
export interface TboxConfig {
  /** The API root the Tbox SDK calls (`https://api.tbox.cn`). */
  baseUrl: string;
  apiKey: string;
  appId: string;
  timeoutMs: number;
}

/** LangBot's bounds: the answer's characters and one uploaded image's bytes. */
export const MAX_TBOX_RESPONSE_CHARS = 1024 * 1024;
export const MAX_TBOX_MEDIA_BYTES = 10 * 1024 * 1024;
/** The SDK's time limit of a file upload; a chat has the runner's timeout. */
const UPLOAD_TIMEOUT_MS = 30_000;

/** A `message` event's data: its `payload` is JSON text, parsed per type. */
interface TboxEvent {
  type?: string;
  lane?: string;
  payload?: unknown;
  status_code?: unknown;
  message?: unknown;
  request_id?: unknown;
  errorCode?: unknown;
  errorMsg?: unknown;
}

/** Tbox's JSON answers (a refusal, an upload, a non-streamed chat): `errorCode` `"0"` is success. */
interface TboxJson {
  errorCode?: unknown;
  errorMsg?: unknown;
  traceId?: unknown;
  data?: unknown;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined);
/** A payload the SDK hands on parsed (chunk, header) or as text (thinking): either form is read. */
const payloadOf = (v: unknown): Json => obj(typeof v === 'string' ? parseEvent<unknown>(v) : v) ?? {};

/** The Tbox SDK's headers: the key as is (no `Bearer`), and its caller mark. */
function headers(cfg: TboxConfig, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: cfg.apiKey, source: 'AGENT_SDK', ...extra };
}

function jsonError(what: string, body: TboxJson | undefined, raw: string): ExternalRunnerError {
  if (body && body.errorCode !== undefined) return new ExternalRunnerError(`${what} error ${str(body.errorCode)}: ${str(body.errorMsg)}`);
  return new ExternalRunnerError(`${what} answered no stream: ${raw.slice(0, 500)}`);
}

/** A refused call: its status and Tbox's `errorCode`/`errorMsg` (the key is never in it: Tbox does not echo it). */
async function refused(res: Response, what: string): Promise<ExternalRunnerError> {
  const raw = (await res.text().catch(() => '')).slice(0, 500);
  const body = parseEvent<TboxJson>(raw);
  const detail = body?.errorCode !== undefined ? `${str(body.errorCode)} ${str(body.errorMsg)}`.trim() : raw;
  return new ExternalRunnerError(`${what} answered HTTP ${res.status}: ${detail}`);
}

/** Uploads one image (`POST /api/file/upload`, multipart `file`) and returns Tbox's file id. */
async function uploadImage(cfg: TboxConfig, image: ExternalImage, index: number, signal?: AbortSignal): Promise<string> {
  if (image.bytes.byteLength > MAX_TBOX_MEDIA_BYTES) throw new ExternalRunnerError(`Tbox image ${index + 1} is larger than ${MAX_TBOX_MEDIA_BYTES} bytes`);
  const form = new FormData();
  const ext = image.contentType.split('/')[1]?.replace('jpeg', 'jpg') ?? 'bin';
  form.append('file', new Blob([image.bytes], { type: image.contentType }), `image-${index + 1}.${ext}`);
  const res = await fetch(`${cfg.baseUrl.replace(/\/+$/, '')}/api/file/upload`, { method: 'POST', headers: headers(cfg), body: form, signal: requestSignal(UPLOAD_TIMEOUT_MS, signal) });
  if (!res.ok) throw await refused(res, 'Tbox file upload');
  const raw = (await res.text()).slice(0, 64 * 1024);
  const body = parseEvent<TboxJson>(raw);
  if (str(body?.errorCode) !== '0' || typeof body?.data !== 'string' || body.data === '') throw jsonError('Tbox file upload', body, raw);
  return body.data;
}

/**
 * A Tbox app's chat API (`POST {base}/api/chat`, as LangBot's `tboxsdk` client calls it): the app id,
 * the query, the remote `conversationId` once there is one, and the user's images uploaded first
 * (`/api/file/upload`, sent as `files`). The SDK's `userId` is LangBot's bot id, so the bot's id is
 * sent as it. Streaming answers with server-sent `message` events whose data has a `type`: `chunk`
 * (payload `{conversationId, messageId, text}`, the answer's deltas), `thinking` (payload with
 * `ext_data.text`, shown inside `<think>` unless `remove-think`), `error`; other types (header, meta,
 * end) carry nothing for the reply. An `error` event fails the run. Tbox sends no end event LangBot
 * waits for, so the end of the stream is the end of the answer. Non-streaming, it answers one JSON
 * body (`data.result[0].chunk`, `data.reasoningContent[0].text`).
 */
export async function runTbox(cfg: TboxConfig, input: ExternalInput): Promise<ExternalResult> {
  const images = input.images ? await input.images() : [];
  const fileIds: string[] = [];
  for (const [i, image] of images.entries()) fileIds.push(await uploadImage(cfg, image, i, input.signal));
  const body = {
    appId: cfg.appId,
    query: input.query,
    stream: input.stream,
    searchEngine: false,
    userId: input.botId ?? input.user,
    ...(input.conversationId ? { conversationId: input.conversationId } : {}),
    ...(fileIds.length ? { files: fileIds.map((fileId) => ({ fileId, type: 'IMAGE' })) } : {}),
  };
  const res = await fetch(`${cfg.baseUrl.replace(/\/+$/, '')}/api/chat`, {
    method: 'POST',
    headers: headers(cfg, { 'content-type': 'application/json', accept: input.stream ? 'text/event-stream' : 'application/json' }),
    body: JSON.stringify(body),
    signal: requestSignal(cfg.timeoutMs, input.signal),
  });
  if (!res.ok) throw await refused(res, 'Tbox');
  return input.stream ? streamed(res, input) : whole(res, input);
}

/** A JSON body read up to `limit` characters; a longer one fails rather than being held whole. */
async function boundedText(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(bytes, { stream: true });
    // Leaving the loop by the throw cancels the body.
    if (text.length > limit) throw new ExternalRunnerError('Tbox response exceeds the runtime limit');
  }
  return text + decoder.decode();
}

async function whole(res: Response, input: ExternalInput): Promise<ExternalResult> {
  // The answer's bound plus room for the JSON around it (escapes, the reasoning).
  const raw = await boundedText(res, MAX_TBOX_RESPONSE_CHARS * 2);
  const body = parseEvent<TboxJson>(raw);
  if (str(body?.errorCode) !== '0') throw jsonError('Tbox', body, raw);
  const data = obj(body?.data) ?? {};
  const thought = obj((data.reasoningContent as unknown[] | undefined)?.[0])?.text;
  const chunk = obj((data.result as unknown[] | undefined)?.[0])?.chunk;
  const reply = new ExternalReply(input);
  let text = '';
  if (thought && !input.removeThink) text += `<think>\n${str(thought)}\n</think>\n`;
  text += str(chunk);
  if (text.length > MAX_TBOX_RESPONSE_CHARS) throw new ExternalRunnerError('Tbox response exceeds the runtime limit');
  if (text) await reply.delta(text);
  const conversationId = typeof data.conversationId === 'string' && data.conversationId ? data.conversationId : input.conversationId;
  return { text: await reply.finish(), conversationId };
}

async function streamed(res: Response, input: ExternalInput): Promise<ExternalResult> {
  // A refusal may come back 200 as JSON instead of a stream (the SDK treats it as an error too).
  const type = res.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'text/event-stream') {
    const raw = (await res.text().catch(() => '')).slice(0, 64 * 1024);
    throw jsonError('Tbox', parseEvent<TboxJson>(raw), raw);
  }
  const reply = new ExternalReply(input);
  let conversationId = input.conversationId;
  let total = 0;
  let thinking: 'none' | 'open' | 'closed' = 'none';
  const add = async (text: string) => {
    total += text.length;
    if (total > MAX_TBOX_RESPONSE_CHARS) throw new ExternalRunnerError('Tbox response exceeds the runtime limit');
    await reply.delta(text);
  };
  let fresh = true;
  for await (const { event, data } of sseMessages(res.body)) {
    if (event === 'error') {
      const err = obj(parseEvent<unknown>(data));
      throw new ExternalRunnerError(`Tbox stream error: ${str(err?.description ?? err?.message, data.slice(0, 500))}`);
    }
    if (event !== 'message') continue;
    const ev = parseEvent<TboxEvent>(data);
    if (!ev || typeof ev !== 'object') continue;
    if (ev.type === 'chunk') {
      if (thinking === 'open') {
        await add('\n</think>\n');
        thinking = 'closed';
      }
      const payload = payloadOf(ev.payload);
      // The conversation of this answer: a new one when the stored id expired on Tbox's side.
      if (fresh && typeof payload.conversationId === 'string' && payload.conversationId) {
        conversationId = payload.conversationId;
        fresh = false;
      }
      if (typeof payload.text === 'string' && payload.text) await add(payload.text);
    } else if (ev.type === 'thinking') {
      if (input.removeThink) continue;
      const text = obj(payloadOf(ev.payload).ext_data)?.text;
      if (typeof text === 'string' && text) {
        await add(thinking === 'none' ? `<think>\n${text}` : text);
        thinking = 'open';
      }
    } else if (ev.type === 'error') {
      const payload = payloadOf(ev.payload);
      const status = ev.status_code ?? payload.status_code ?? ev.errorCode ?? payload.errorCode ?? '';
      const message = ev.message ?? payload.message ?? ev.errorMsg ?? payload.errorMsg ?? '';
      const request = ev.request_id ?? payload.request_id ?? '?';
      throw new ExternalRunnerError(`Tbox error ${str(status)}: ${str(message)} (request ${str(request)})`);
    }
  }
  if (thinking === 'open') await add('\n</think>\n');
  return { text: await reply.finish(), conversationId };
}

/** Reads `ai.tbox-app-api` into the runner's config; secrets through `secret`. */
export function tboxConfig(s: RunnerSettings, secret: SecretResolver): TboxConfig {
  const baseUrl = str(s['base-url'], 'https://api.tbox.cn') || 'https://api.tbox.cn';
  if (!/^https?:\/\//i.test(baseUrl)) throw new ExternalRunnerError('tbox-app-api base-url must start with http:// or https://');
  return {
    // Not a LangBot setting (its SDK's fixed host); set it for a proxy.
    baseUrl,
    apiKey: secret(s['api-key']),
    appId: str(s['app-id']),
    // The SDK's own time limit of a chat (LangBot sets none).
    timeoutMs: 300_000,
  };
}
