import { setTimeout as delay } from 'node:timers/promises';

export class TelegramApiError extends Error {
  constructor(
    readonly method: string,
    readonly status: number,
    readonly description: string,
    readonly retryAfterS?: number,
  ) {
    super(`telegram ${method}: ${status} ${description}`);
  }
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500 || this.status === 0;
  }
}

/** A minimal Bot API client: JSON POSTs to `{base}/bot{token}/{method}`, with LangBot-like retry on 429/5xx. */
export class TelegramApi {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly opts: { maxRetries?: number; timeoutMs?: number; signal?: AbortSignal; fetchImpl?: typeof fetch } = {},
  ) {}

  async call<T = unknown>(method: string, params: Record<string, unknown>): Promise<T> {
    const maxRetries = this.opts.maxRetries ?? 3;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(method, params);
      } catch (err) {
        const e = err instanceof TelegramApiError ? err : new TelegramApiError(method, 0, (err as Error).message);
        if (!e.retryable || attempt > maxRetries || this.opts.signal?.aborted) throw e;
        const waitMs = e.retryAfterS !== undefined ? Math.min(e.retryAfterS, 30) * 1000 : Math.min(2 ** (attempt - 1), 30) * 1000;
        await delay(waitMs, undefined, this.opts.signal ? { signal: this.opts.signal } : undefined);
      }
    }
  }

  private async once<T>(method: string, params: Record<string, unknown>): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}/bot${this.token}/${method}`;
    const signals = [AbortSignal.timeout(this.opts.timeoutMs ?? 15_000), ...(this.opts.signal ? [this.opts.signal] : [])];
    const res = await (this.opts.fetchImpl ?? fetch)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(params),
      signal: AbortSignal.any(signals),
    });
    const json = (await res.json().catch(() => ({}))) as { ok?: boolean; result?: T; description?: string; error_code?: number; parameters?: { retry_after?: number } };
    if (res.ok && json.ok) return json.result as T;
    throw new TelegramApiError(method, json.error_code ?? res.status, json.description ?? `HTTP ${res.status}`, json.parameters?.retry_after);
  }
}
