import OpenAI from 'openai';
import type { ResolvedModel } from './model.js';
import { createModelFetch, type FetchFunction } from './model-fetch.js';

/**
 * One SDK client per API, endpoint and key, so connections are kept alive across runs. The OpenAI
 * client is `get`; the native providers keep theirs through `client`.
 */
export class OpenAIClientPool {
  private readonly clients = new Map<string, unknown>();

  /**
   * `fetch`: how every model request of this pool goes out, through the SDKs that take a `fetch` and
   * the providers called without one; by default one keep-alive connection pool per endpoint.
   */
  constructor(
    private readonly maxClients = 256,
    readonly fetch: FetchFunction = createModelFetch(),
  ) {}

  get(model: ResolvedModel): OpenAI {
    // Retries are the fallback chain's job, not the SDK's: a failing model should hand over quickly.
    return this.client('openai', model, (m) => new OpenAI({ baseURL: m.baseUrl, apiKey: m.apiKey || 'none', timeout: m.timeoutMs, maxRetries: 0, fetch: this.fetch }), (c): c is OpenAI => c instanceof OpenAI);
  }

  /** The cached client of `kind` for the model's endpoint, key and timeout, made with `make` the first time. */
  client<T>(kind: string, model: ResolvedModel, make: (model: ResolvedModel) => T, is: (client: unknown) => client is T): T {
    const key = `${kind}\u0000${model.baseUrl}\u0000${model.apiKey}\u0000${model.timeoutMs}`;
    const cached = this.clients.get(key);
    if (cached !== undefined && is(cached)) return cached;
    if (this.clients.size >= this.maxClients) this.clients.delete(this.clients.keys().next().value!);
    const client = make(model);
    this.clients.set(key, client);
    return client;
  }
}
