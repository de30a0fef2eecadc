import { setTimeout as delay } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, sign } from './verify.js';

/**
 * One keep-alive pool for every callback receiver. undici's `request` costs a fraction of the CPU of
 * `fetch` (no WHATWG streams, no AbortSignal.any per attempt), and a callback is sent per reply part.
 */
const callbackAgent = new Agent({ keepAliveTimeout: 30_000, connections: 64 });

/** LangBot caps the retry backoff at 30 s. */
export const MAX_BACKOFF_MS = 30_000;

/** Sleep after failed attempt n (1-based) before retrying: min(2^(n−1), 30) s, no jitter. */
export function backoffMs(failedAttempt: number): number {
  return Math.min(2 ** (failedAttempt - 1) * 1000, MAX_BACKOFF_MS);
}

export interface DeliverCallbackOptions {
  url: string;
  /** The exact bytes to send and sign (see callbackBody). */
  body: string | Uint8Array;
  secret: string;
  /** Whole-attempt timeout; undefined or ≤ 0 means none, as in aiohttp. */
  timeoutMs?: number;
  /** Extra attempts after the first; ≤ 0 means exactly one attempt. */
  maxRetries: number;
  sleep?: (ms: number) => Promise<void>;
  /** Clock in epoch milliseconds. */
  now?: () => number;
  /** Stops retrying (and the attempt in flight), e.g. on shutdown. */
  signal?: AbortSignal;
}

export interface DeliveryResult {
  delivered: boolean;
  attempts: number;
  lastStatus?: number;
  error?: string;
}

type AttemptOutcome = { kind: 'success' | 'reject' | 'retry'; status?: number; error?: string };

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
}

/**
 * One callback delivery with LangBot's policy: < 400 is success, 4xx gives up at once,
 * 5xx / network error / timeout is retried with backoff. The timestamp and signature are computed
 * once and reused on every retry, as LangBot does, so receivers see identical headers.
 */
export async function deliverCallback(opts: DeliverCallbackOptions): Promise<DeliveryResult> {
  const sleep = opts.sleep ?? ((ms: number) => delay(ms, undefined, { signal: opts.signal }));
  const bytes = typeof opts.body === 'string' ? Buffer.from(opts.body, 'utf8') : opts.body;
  const timestamp = String(Math.trunc((opts.now ?? Date.now)() / 1000));
  const headers = {
    'Content-Type': 'application/json',
    [HEADER_TIMESTAMP]: timestamp,
    [HEADER_SIGNATURE]: sign(opts.secret, timestamp, bytes),
  };
  const totalAttempts = Math.max(1, 1 + Math.trunc(opts.maxRetries));

  const attempt = async (): Promise<AttemptOutcome> => {
    // One controller per attempt, aborted by the whole-attempt timeout or by the caller's signal.
    const abort = new AbortController();
    let timedOut = false;
    const timer = opts.timeoutMs && opts.timeoutMs > 0 ? setTimeout(() => { timedOut = true; abort.abort(); }, opts.timeoutMs) : undefined;
    const onAbort = () => abort.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (opts.signal?.aborted) return { kind: 'retry', error: 'aborted' };
      const res = await request(opts.url, { method: 'POST', headers, body: bytes, signal: abort.signal, dispatcher: callbackAgent });
      // The receiver's body is ignored, as in LangBot; draining it lets the connection be reused.
      await res.body.dump().catch(() => undefined);
      if (res.statusCode < 400) return { kind: 'success', status: res.statusCode };
      if (res.statusCode < 500) return { kind: 'reject', status: res.statusCode, error: `HTTP ${res.statusCode}` };
      return { kind: 'retry', status: res.statusCode, error: `HTTP ${res.statusCode}` };
    } catch (err) {
      return { kind: 'retry', error: timedOut ? 'timeout' : describe(err) };
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  };

  let last: AttemptOutcome = { kind: 'retry' };
  for (let n = 1; n <= totalAttempts; n++) {
    last = await attempt();
    const result: DeliveryResult = { delivered: last.kind === 'success', attempts: n };
    if (last.status !== undefined) result.lastStatus = last.status;
    if (last.error !== undefined) result.error = last.error;
    if (last.kind !== 'retry' || n === totalAttempts || opts.signal?.aborted) return result;
    try {
      await sleep(backoffMs(n));
    } catch {
      return result;
    }
  }
  throw new Error('unreachable');
}
