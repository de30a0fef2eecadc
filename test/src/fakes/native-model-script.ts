import type { IncomingHttpHeaders } from 'node:http';

/**
 * What the native model fakes (Anthropic, Gemini, Ollama) answer, scripted per request like the
 * OpenAI fake: each server turns it into its own API's wire format.
 */
export interface NativeFakeResponse {
  /** The answer's text, streamed in word-sized pieces (or `chunkSize` characters). */
  text?: string;
  /** Reasoning streamed before the text (Anthropic thinking, Gemini thought summary, Ollama `thinking`). */
  thinking?: string;
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> }>;
  /** Answer with this HTTP status and the API's own error body instead. */
  error?: { status: number; message: string };
  chunkSize?: number;
  /** Pause before each streamed piece, so a platform sees the answer grow instead of one coalesced part. */
  pieceDelayMs?: number;
}

export type NativeFakeResponder = (body: Record<string, unknown>, n: number) => NativeFakeResponse;

export interface NativeRecordedRequest {
  /** 1-based among model requests. */
  n: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface NativeModelFake {
  /** The base URL a model configuration names. */
  url: string;
  requests: NativeRecordedRequest[];
  script(...responses: Array<NativeFakeResponse | NativeFakeResponder>): void;
  setDefault(response: NativeFakeResponse | NativeFakeResponder): void;
  close(): Promise<void>;
}

/** A native fake that also embeds (Ollama, Gemini): each text gets `fakeEmbedding`'s vector, so searches are predictable. */
export interface NativeEmbeddingFake {
  /** Bodies of embedding requests, in order (not counted among `requests`). */
  embeddingRequests: Array<Record<string, unknown>>;
}

/** The queue of scripted answers and the default, shared by the three fakes. */
export class NativeScript {
  private readonly queue: Array<NativeFakeResponse | NativeFakeResponder> = [];
  private fallback: NativeFakeResponse | NativeFakeResponder = { text: 'default answer' };
  readonly requests: NativeRecordedRequest[] = [];

  script(...responses: Array<NativeFakeResponse | NativeFakeResponder>): void {
    this.queue.push(...responses);
  }

  setDefault(response: NativeFakeResponse | NativeFakeResponder): void {
    this.fallback = response;
  }

  /** Records a request refused before any answer was picked. */
  record(path: string, headers: IncomingHttpHeaders, body: Record<string, unknown>): void {
    this.requests.push({ n: this.requests.length + 1, path, headers, body });
  }

  /** Records the request and picks its answer. */
  next(path: string, headers: IncomingHttpHeaders, body: Record<string, unknown>): NativeFakeResponse {
    this.record(path, headers, body);
    const entry = this.queue.shift() ?? this.fallback;
    return typeof entry === 'function' ? entry(body, this.requests.length) : entry;
  }
}

/** Word-sized pieces with their whitespace, or fixed-size ones. */
export function textPieces(text: string, chunkSize?: number): string[] {
  if (!text) return [];
  if (chunkSize && chunkSize > 0) {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += chunkSize) out.push(text.slice(i, i + chunkSize));
    return out;
  }
  return text.match(/\s*\S+\s*|\s+/g) ?? [text];
}

export function wordCount(value: unknown): number {
  return JSON.stringify(value ?? '').split(/\s+/).filter(Boolean).length;
}

/** Waits the response's piece delay, if any, before the next streamed piece. */
export function pace(response: NativeFakeResponse): Promise<void> | undefined {
  return response.pieceDelayMs ? new Promise((resolve) => setTimeout(resolve, response.pieceDelayMs)) : undefined;
}
