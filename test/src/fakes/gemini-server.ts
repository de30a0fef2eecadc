import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listen, readBody } from './http-util.js';
import { NativeScript, pace, textPieces, wordCount, type NativeEmbeddingFake, type NativeModelFake } from './native-model-script.js';
import { fakeEmbedding } from './openai-server.js';

/**
 * A fake Gemini API (`POST /v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`) speaking the real wire format: `GenerateContentResponse` JSON,
 * or one per SSE `data:` event, with thought parts (`thought: true`), `functionCall` parts carrying a
 * `thoughtSignature`, `finishReason` and `usageMetadata` on the last chunk. Like the real API it
 * checks `x-goog-api-key` (400 `API_KEY_INVALID`) and refuses (400) a request whose model turn
 * brings back one of its function calls without that call's thought signature.
 * `:batchEmbedContents` answers `{embeddings: [{values}]}` in the requests' order, each request
 * naming the model of the path (400 otherwise), `outputDimensionality` cutting the vector.
 */

interface Part {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { name: string; args: Record<string, unknown> };
  [k: string]: unknown;
}

export interface FakeGemini extends NativeModelFake, NativeEmbeddingFake {}

export async function startFakeGemini(opts: { apiKey?: string } = {}): Promise<FakeGemini> {
  const script = new NativeScript();
  const embeddingRequests: FakeGemini['embeddingRequests'] = [];
  /** JSON of a function call handed out → its thought signature. */
  const signatures = new Map<string, string>();
  let ids = 0;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, code: number, status: string, message: string, reason?: string) =>
    send(res, code, { error: { code, message, status, ...(reason ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] } : {}) } });

  function signatureProblem(body: Record<string, unknown>): string | null {
    const contents = Array.isArray(body.contents) ? body.contents : [];
    for (const c of contents) {
      if (c?.role !== 'model' || !Array.isArray(c.parts)) continue;
      for (const p of c.parts as Part[]) {
        if (!p.functionCall) continue;
        const expected = signatures.get(JSON.stringify({ name: p.functionCall.name, args: p.functionCall.args }));
        if (expected && p.thoughtSignature !== expected) return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly.`;
      }
    }
    return null;
  }

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const [path, query = ''] = (req.url ?? '').split('?');
    const match = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|batchEmbedContents)$/.exec(path);
    if (req.method !== 'POST' || !match) return error(res, 404, 'NOT_FOUND', `no route ${req.method} ${req.url}`);
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    if (opts.apiKey && req.headers['x-goog-api-key'] !== opts.apiKey) return error(res, 400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID');
    if (match[2] === 'batchEmbedContents') {
      embeddingRequests.push(body);
      const requests: Array<{ model?: unknown; content?: { parts?: Part[] }; outputDimensionality?: unknown }> = Array.isArray(body.requests) ? body.requests : [];
      const model = `models/${decodeURIComponent(match[1])}`;
      const wrong = requests.findIndex((r) => r.model !== model);
      if (wrong >= 0) return error(res, 400, 'INVALID_ARGUMENT', `* BatchEmbedContentsRequest.requests[${wrong}].model: the model must be ${model}`);
      return send(res, 200, {
        embeddings: requests.map((r) => {
          const v = fakeEmbedding((r.content?.parts ?? []).map((p) => p.text ?? '').join(''));
          return { values: typeof r.outputDimensionality === 'number' ? v.slice(0, r.outputDimensionality) : v };
        }),
      });
    }
    const problem = signatureProblem(body);
    if (problem) {
      script.record(path, req.headers, body);
      return error(res, 400, 'INVALID_ARGUMENT', problem);
    }
    const answer = script.next(path, req.headers, body);
    if (answer.error) return error(res, answer.error.status, answer.error.status === 429 ? 'RESOURCE_EXHAUSTED' : 'INTERNAL', answer.error.message);

    const model = decodeURIComponent(match[1]);
    const responseId = `resp-${++ids}`;
    const usageMetadata = { promptTokenCount: wordCount(body.contents) + wordCount(body.systemInstruction), candidatesTokenCount: wordCount(answer.text), thoughtsTokenCount: wordCount(answer.thinking), totalTokenCount: 0 };
    usageMetadata.totalTokenCount = usageMetadata.promptTokenCount + usageMetadata.candidatesTokenCount + usageMetadata.thoughtsTokenCount;
    const calls: Part[] = (answer.toolCalls ?? []).map((c) => {
      const signature = `gsig-${++ids}`;
      signatures.set(JSON.stringify({ name: c.name, args: c.arguments }), signature);
      return { functionCall: { name: c.name, args: c.arguments }, thoughtSignature: signature };
    });
    const chunk = (parts: Part[], last: boolean) => ({
      candidates: [{ content: { role: 'model', parts }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 }],
      ...(last ? { usageMetadata } : {}),
      modelVersion: model,
      responseId,
    });
    const thoughtParts: Part[] = answer.thinking ? [{ text: answer.thinking, thought: true }] : [];
    if (match[2] === 'generateContent') return send(res, 200, chunk([...thoughtParts, ...(answer.text ? [{ text: answer.text }] : []), ...calls], true));
    if (!/(^|&)alt=sse(&|$)/.test(query)) return error(res, 400, 'INVALID_ARGUMENT', 'this fake streams only with alt=sse');

    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\r\n\r\n`);
    for (const piece of textPieces(answer.thinking ?? '', answer.chunkSize)) {
      await pace(answer);
      event(chunk([{ text: piece, thought: true }], false));
    }
    const textChunks = textPieces(answer.text ?? '', answer.chunkSize);
    // The last chunk carries the calls (with their signatures), the finish reason and the usage.
    for (const [i, piece] of textChunks.entries()) {
      await pace(answer);
      event(chunk([{ text: piece }], i === textChunks.length - 1 && calls.length === 0));
    }
    if (calls.length || textChunks.length === 0) event(chunk(calls, true));
    res.end();
  });
  const url = await listen(server);
  return { url: `${url}/v1beta`, requests: script.requests, embeddingRequests, script: (...r) => script.script(...r), setDefault: (r) => script.setDefault(r), close: () => closeServer(server) };
}
