import OpenAI from 'openai';
import type { ResolvedModel } from './model.js';

/** One SDK client per endpoint and key, so connections are kept alive across runs. */
export class OpenAIClientPool {
  private readonly clients = new Map<string, OpenAI>();

  constructor(private readonly maxClients = 256) {}

  get(model: ResolvedModel): OpenAI {
    const key = `${model.baseUrl}\u0000${model.apiKey}\u0000${model.timeoutMs}`;
    let client = this.clients.get(key);
    if (!client) {
      if (this.clients.size >= this.maxClients) this.clients.delete(this.clients.keys().next().value!);
      // Retries are the fallback chain's job, not the SDK's: a failing model should hand over quickly.
      client = new OpenAI({ baseURL: model.baseUrl, apiKey: model.apiKey || 'none', timeout: model.timeoutMs, maxRetries: 0 });
      this.clients.set(key, client);
    }
    return client;
  }
}
