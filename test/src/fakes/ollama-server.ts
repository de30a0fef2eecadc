import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listen, readBody } from './http-util.js';
import { NativeScript, pace, textPieces, wordCount, type NativeEmbeddingFake, type NativeModelFake } from './native-model-script.js';
import { fakeEmbedding } from './openai-server.js';

/**
 * A fake Ollama (`POST /api/chat`) speaking its real wire format: NDJSON lines
 * `{model, created_at, message: {role, content, thinking?, tool_calls?}, done: false}` and a last
 * line with `done: true`, `done_reason` and the eval counts; one JSON object with `stream: false`.
 * Tool calls come whole, with object arguments. An unknown model is 404 `{"error": ...}`, as Ollama
 * answers; with `apiKey` set (Ollama's cloud), a missing bearer token is 401. `POST /api/embed`
 * (`input` a string or a list) answers `{model, embeddings, prompt_eval_count}` with unit vectors,
 * as Ollama does.
 */

export interface FakeOllama extends NativeModelFake, NativeEmbeddingFake {}

export async function startFakeOllama(opts: { apiKey?: string; models?: string[] } = {}): Promise<FakeOllama> {
  const script = new NativeScript();
  const embeddingRequests: FakeOllama['embeddingRequests'] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || (req.url !== '/api/chat' && req.url !== '/api/embed')) return send(res, 404, { error: `404 page not found` });
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) return send(res, 401, { error: 'unauthorized' });
    if (opts.models && !opts.models.includes(String(body.model))) return send(res, 404, { error: `model "${body.model}" not found, try pulling it first` });
    if (req.url === '/api/embed') {
      embeddingRequests.push(body);
      const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
      if (!inputs.every((t): t is string => typeof t === 'string')) return send(res, 400, { error: 'invalid input type' });
      const embeddings = inputs.map((t) => {
        const v = fakeEmbedding(t);
        const norm = Math.hypot(...v);
        return v.map((x) => x / norm);
      });
      return send(res, 200, { model: body.model, embeddings, total_duration: 1_000_000, load_duration: 1_000, prompt_eval_count: wordCount(inputs) });
    }
    const answer = script.next('/api/chat', req.headers, body);
    if (answer.error) return send(res, answer.error.status, { error: answer.error.message });

    const at = () => new Date().toISOString();
    const toolCalls = (answer.toolCalls ?? []).map((c) => ({ function: { name: c.name, arguments: c.arguments } }));
    const last = {
      model: body.model,
      created_at: at(),
      message: { role: 'assistant', content: '' },
      done: true,
      done_reason: 'stop',
      total_duration: 1_000_000,
      prompt_eval_count: wordCount(body.messages),
      eval_count: wordCount(answer.text) + wordCount(answer.thinking),
    };
    if (body.stream === false) {
      return send(res, 200, { ...last, message: { role: 'assistant', content: answer.text ?? '', ...(answer.thinking ? { thinking: answer.thinking } : {}), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) } });
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const line = (message: Record<string, unknown>) => res.write(`${JSON.stringify({ model: body.model, created_at: at(), message: { role: 'assistant', content: '', ...message }, done: false })}\n`);
    for (const piece of textPieces(answer.thinking ?? '', answer.chunkSize)) {
      await pace(answer);
      line({ thinking: piece });
    }
    for (const piece of textPieces(answer.text ?? '', answer.chunkSize)) {
      await pace(answer);
      line({ content: piece });
    }
    if (toolCalls.length) line({ tool_calls: toolCalls });
    res.end(`${JSON.stringify(last)}\n`);
  });
  const url = await listen(server);
  return { url, requests: script.requests, embeddingRequests, script: (...r) => script.script(...r), setDefault: (r) => script.setDefault(r), close: () => closeServer(server) };
}
