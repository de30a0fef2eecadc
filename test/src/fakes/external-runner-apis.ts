import { createServer, type IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeServer, listen, readBody } from './http-util.js';

/** Fakes of the two external runner APIs Conveyor speaks: Dify's service API and an n8n chat webhook. */

export interface RecordedExternalRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

export interface FakeExternal {
  url: string;
  requests: RecordedExternalRequest[];
  close(): Promise<void>;
}

/**
 * Dify: `POST /v1/chat-messages` streams `message` events (the answer split in words) and
 * `message_end`; `POST /v1/workflows/run` streams `text_chunk` events and `workflow_finished` with
 * `outputs.summary`. Requests need `Authorization: Bearer <apiKey>`.
 */
export async function startFakeDify(opts: { apiKey: string; answer: string; conversationId?: string; failWith?: string }): Promise<FakeExternal> {
  const requests: RecordedExternalRequest[] = [];
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ code: 'unauthorized', message: 'Access token is invalid', status: 401 }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    const conversation_id = body.conversation_id || opts.conversationId || 'dify-conv-1';
    const words = opts.answer.match(/\S+\s*/g) ?? [];
    res.write('event: ping\n\n');
    if (req.url === '/v1/chat-messages') {
      for (const w of words) {
        send({ event: 'message', answer: w, conversation_id, message_id: 'm1' });
        await sleep(1);
      }
      if (opts.failWith) send({ event: 'error', code: 'provider_error', message: opts.failWith, status: 500 });
      else send({ event: 'message_end', conversation_id, message_id: 'm1', metadata: {} });
    } else if (req.url === '/v1/workflows/run') {
      send({ event: 'workflow_started', data: { id: 'run1' } });
      for (const w of words) send({ event: 'text_chunk', data: { text: w } });
      send({ event: 'workflow_finished', data: { status: 'succeeded', outputs: { summary: opts.answer } } });
    }
    res.end();
  });
  const base = await listen(server);
  return { url: `${base}/v1`, requests, close: () => closeServer(server) };
}

/**
 * n8n: `POST /webhook`. `streaming`: `{"type":"item","content":…}` objects back to back, written in
 * pieces that split objects, then `{"type":"end"}`; otherwise one JSON object `{response: answer}`.
 * With `header` set, requests must carry it.
 */
export async function startFakeN8n(opts: { answer: string; streaming: boolean; header?: [string, string] }): Promise<FakeExternal> {
  const requests: RecordedExternalRequest[] = [];
  const server = createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (opts.header && req.headers[opts.header[0].toLowerCase()] !== opts.header[1]) return void res.writeHead(403).end('{"message":"Authorization data is wrong!"}');
    res.writeHead(200, { 'content-type': opts.streaming ? 'application/json; charset=utf-8' : 'application/json' });
    if (!opts.streaming) return void res.end(JSON.stringify({ response: opts.answer }));
    const objects = [{ type: 'begin', metadata: {} }, ...(opts.answer.match(/\S+\s*/g) ?? []).map((content) => ({ type: 'item', content })), { type: 'end' }];
    const text = objects.map((o) => JSON.stringify(o)).join('\n');
    // Split at arbitrary points so objects straddle writes, as on a real network.
    for (let i = 0; i < text.length; i += 7) {
      res.write(text.slice(i, i + 7));
      await sleep(0);
    }
    res.end();
  });
  const base = await listen(server);
  return { url: `${base}/webhook`, requests, close: () => closeServer(server) };
}
