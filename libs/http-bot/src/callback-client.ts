import { setTimeout as delay } from 'node:timers/promises';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, sign } from './signing.js';

/** LangBot caps the retry backoff at 30 s (§10). */
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
  fetchImpl?: typeof fetch;
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
  if (err.name === 'TimeoutError') return 'timeout';
  return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
}

/**
 * One callback delivery with LangBot's policy (§10): < 400 is success, 4xx gives up at once,
 * 5xx / network error / timeout is retried with backoff. The timestamp and signature are computed
 * once and reused on every retry (§4.4), so receivers see identical headers.
 */
export async function deliverCallback(opts: DeliverCallbackOptions): Promise<DeliveryResult> {
  const fetchImpl = opts.fetchImpl ?? fetch;
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
    const signals = [opts.signal, opts.timeoutMs && opts.timeoutMs > 0 ? AbortSignal.timeout(opts.timeoutMs) : undefined];
    const active = signals.filter((s): s is AbortSignal => s !== undefined);
    try {
      const res = await fetchImpl(opts.url, {
        method: 'POST',
        headers,
        body: bytes,
        signal: active.length === 0 ? undefined : active.length === 1 ? active[0] : AbortSignal.any(active),
      });
      // The receiver's body is ignored (§8.1); draining it lets the connection be reused.
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 400) return { kind: 'success', status: res.status };
      if (res.status < 500) return { kind: 'reject', status: res.status, error: `HTTP ${res.status}` };
      return { kind: 'retry', status: res.status, error: `HTTP ${res.status}` };
    } catch (err) {
      return { kind: 'retry', error: describe(err) };
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
