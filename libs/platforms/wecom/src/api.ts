import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { MediaTooLargeError, readBoundedMedia } from '@conveyor/platform-kit';

const CALL_TIMEOUT_MS = 10_000;
const MAX_ATTEMPTS = 3;
/**
 * `access_token` not valid (40001: not the latest, 40014: invalid) or expired (42001): the caller
 * fetches a new one and sends again. WeChat and WeCom share these codes.
 */
const TOKEN_ERRCODES: ReadonlySet<number> = new Set([40001, 40014, 42001]);

/** Every WeChat-family API answer: `errcode` 0 (or absent) is success. */
export const ApiAnswer = z.object({ errcode: z.number().int().default(0), errmsg: z.string().default('') }).loose();
export type ApiAnswer = z.infer<typeof ApiAnswer>;
/** A token endpoint's answer (`gettoken`, `cgi-bin/token`). */
export const TokenAnswer = ApiAnswer.extend({ access_token: z.string().min(1).optional(), expires_in: z.number().int().positive().optional() });

/** A WeChat or WeCom API error: `errcode` as the platform gave it; HTTP-level failures have none. */
export class WecomApiError extends Error {
  constructor(
    message: string,
    readonly errcode: number | undefined,
    /** Whether the same call may pass later (5xx, network, the platform's "system busy" -1). */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'WecomApiError';
  }
}

/** Whether the platform refused the call's access token (fetch a new one and call again). */
export function isTokenRejected(err: unknown): boolean {
  return err instanceof WecomApiError && err.errcode !== undefined && TOKEN_ERRCODES.has(err.errcode);
}

export interface ApiRequest {
  method: 'GET' | 'POST';
  /** A JSON body. */
  body?: string;
}

/**
 * One call of a WeChat-family JSON API (`{base}{path}?{query}`), retried (bounded, with backoff)
 * while it may pass later. Errors name the API path, never its query: that holds the secret or the
 * access token. An answer with a non-zero `errcode` is an error.
 */
export async function callWechatApi<T extends ApiAnswer>(fetchImpl: typeof fetch, baseUrl: string, pathAndQuery: string, init: ApiRequest, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T> {
  const path = pathAndQuery.split('?')[0] ?? '';
  const url = `${baseUrl.replace(/\/+$/, '')}${pathAndQuery}`;
  for (let attempt = 1; ; attempt++) {
    try {
      return await callOnce(fetchImpl, url, path, init, schema, signal);
    } catch (err) {
      const retryable = !(err instanceof WecomApiError) || err.retryable;
      if (!retryable || attempt >= MAX_ATTEMPTS || signal?.aborted) throw err;
      await delay(500 * 2 ** (attempt - 1), undefined, signal ? { signal } : undefined);
    }
  }
}

async function callOnce<T extends ApiAnswer>(fetchImpl: typeof fetch, url: string, path: string, init: ApiRequest, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T> {
  const timeout = AbortSignal.timeout(CALL_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetchImpl(url, {
      method: init.method,
      ...(init.body !== undefined ? { body: init.body, headers: { 'content-type': 'application/json' } } : {}),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (err) {
    throw new WecomApiError(`${path}: ${err instanceof Error ? err.name : 'network error'}`, undefined, true);
  }
  const text = await res.text();
  if (!res.ok) throw new WecomApiError(`${path}: HTTP ${res.status}`, undefined, res.status === 429 || res.status >= 500);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new WecomApiError(`${path}: the answer is not JSON`, undefined, false);
  }
  const answer = schema.safeParse(json);
  if (!answer.success) throw new WecomApiError(`${path}: unexpected answer`, undefined, false);
  if (answer.data.errcode !== 0) {
    // -1: "system busy, try again".
    throw new WecomApiError(`${path}: errcode ${answer.data.errcode} ${answer.data.errmsg.slice(0, 200)}`, answer.data.errcode, answer.data.errcode === -1);
  }
  return answer.data;
}

/** A WeCom access token (`gettoken` with the corp id and an app's secret). */
export async function wecomGetToken(fetchImpl: typeof fetch, baseUrl: string, corpid: string, secret: string, signal?: AbortSignal): Promise<{ token: string; expiresInS: number }> {
  const query = new URLSearchParams({ corpid, corpsecret: secret });
  const answer = await callWechatApi(fetchImpl, baseUrl, `/gettoken?${query.toString()}`, { method: 'GET' }, TokenAnswer, signal);
  if (!answer.access_token) throw new WecomApiError('/gettoken answered without access_token', undefined, false);
  return { token: answer.access_token, expiresInS: answer.expires_in ?? 7200 };
}

/**
 * A temporary media file (`media/get?access_token=…&media_id=…`, WeCom's and WeChat customer
 * service's): its bytes and content type. WeCom answers an error as JSON instead of the file (a
 * rejected token among them: `isTokenRejected` tells); a file over `maxBytes` is refused rather than
 * read whole. Errors name the path, never the token.
 */
export async function wecomDownloadMedia(fetchImpl: typeof fetch, baseUrl: string, token: string, mediaId: string, maxBytes: number, signal?: AbortSignal): Promise<{ bytes: Buffer; contentType: string }> {
  const path = '/media/get';
  const query = new URLSearchParams({ access_token: token, media_id: mediaId });
  const timeout = AbortSignal.timeout(CALL_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetchImpl(`${baseUrl.replace(/\/+$/, '')}${path}?${query.toString()}`, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  } catch (err) {
    throw new WecomApiError(`${path}: ${err instanceof Error ? err.name : 'network error'}`, undefined, true);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new WecomApiError(`${path}: HTTP ${res.status}`, undefined, res.status === 429 || res.status >= 500);
  }
  const contentType = (res.headers.get('content-type') ?? 'application/octet-stream').split(';')[0]!.trim();
  let bytes: Buffer;
  try {
    bytes = await readBoundedMedia(res.body, maxBytes, res.headers.get('content-length'));
  } catch (err) {
    if (err instanceof MediaTooLargeError) throw new WecomApiError(`${path}: ${err.message}`, undefined, false);
    throw new WecomApiError(`${path}: ${err instanceof Error ? err.name : 'network error'}`, undefined, true);
  }
  if (contentType === 'application/json' || contentType === 'text/plain') {
    const answer = ApiAnswer.safeParse((() => { try { return JSON.parse(bytes.toString('utf8')); } catch { return undefined; } })());
    const errcode = answer.success ? answer.data.errcode : undefined;
    throw new WecomApiError(`${path}: errcode ${errcode ?? '?'} ${answer.success ? answer.data.errmsg.slice(0, 200) : ''}`.trim(), errcode, errcode === -1);
  }
  return { bytes, contentType };
}
