import { createServer, type IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeServer, listen, readBody } from './http-util.js';
import type { FakeKeyedExternal, RecordedExternalRequest } from './external-runner-apis.js';

/** One file the fake received on `/api/file/upload`. */
export interface TboxUpload {
  fileId: string;
  name: string;
  type: string;
  bytes: number;
}

export interface FakeTbox extends FakeKeyedExternal {
  uploads: TboxUpload[];
  /** Answers every further chat with this HTTP status and a Tbox error body (429, 500, ...). */
  failStatus?: number;
}

export interface FakeTboxOptions {
  apiKey: string;
  appId: string;
  answer: string;
  /** Reasoning the app streams first (`thinking` events), if any. */
  thinking?: string;
  /** A stream `error` message after the answer's first words. */
  failWith?: string;
}

/**
 * Ant Group's Tbox app API as its SDK (`tboxsdk`) speaks it: `Authorization: <key>` (no scheme).
 * `POST /api/chat` with `stream: true` answers server-sent `message` events whose data is
 * `{type, lane, payload}` with the payload as JSON text: a `meta`, the lane's `header`, optional
 * `thinking` events, then `chunk` events (payload `{conversationId, messageId, text}`, the answer
 * split in words); no end event. `stream: false` answers one JSON body
 * (`{errorCode: "0", data: {conversationId, result: [{chunk}], reasoningContent}}`).
 * `POST /api/file/upload` (multipart `file`) answers `{errorCode: "0", data: <file id>}`. A wrong key
 * is HTTP 401 with Tbox's error body; an unknown app is 200 with an error code.
 * Conversations are numbered per fake: `tbox-conv-1`, `tbox-conv-2`, ...
 */
export async function startFakeTbox(opts: FakeTboxOptions): Promise<FakeTbox> {
  const requests: RecordedExternalRequest[] = [];
  const uploads: TboxUpload[] = [];
  let conversations = 0;
  const fake: FakeTbox = { apiKey: opts.apiKey, url: '', requests, uploads, close: () => closeServer(server) };
  const error = (res: import('node:http').ServerResponse, status: number, code: string, msg: string) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ errorCode: code, errorMsg: msg, traceId: 'trace-1' }));
  };
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const path = req.url ?? '';
    const headers: IncomingHttpHeaders = req.headers;
    if (path === '/api/file/upload' && req.method === 'POST') {
      requests.push({ path, headers, body: null });
      if (headers.authorization !== fake.apiKey) return error(res, 401, '401', 'invalid authorization');
      const form = await new Request('http://fake/upload', { method: 'POST', headers: { 'content-type': String(headers['content-type'] ?? '') }, body: raw }).formData().catch(() => undefined);
      const file = form?.get('file');
      if (!file || typeof file === 'string') return error(res, 200, '400', 'file is required');
      const upload = { fileId: `tbox-file-${uploads.length + 1}`, name: file.name, type: file.type, bytes: file.size };
      uploads.push(upload);
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ errorCode: '0', errorMsg: 'success', data: upload.fileId, traceId: 'trace-1' }));
    }
    if (path !== '/api/chat' || req.method !== 'POST') return error(res, 404, '404', 'not found');
    const body = JSON.parse(raw.toString('utf8') || '{}');
    requests.push({ path, headers, body });
    if (headers.authorization !== fake.apiKey) return error(res, 401, '401', 'invalid authorization');
    if (fake.failStatus) return error(res, fake.failStatus, String(fake.failStatus), fake.failStatus === 429 ? 'rate limit exceeded' : 'internal error');
    if (body.appId !== opts.appId) return error(res, 200, '10001', `app ${body.appId} not found`);
    const conversationId = typeof body.conversationId === 'string' && body.conversationId ? body.conversationId : `tbox-conv-${++conversations}`;
    const words = opts.answer.match(/\S+\s*/g) ?? [];
    if (body.stream === false) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({
        errorCode: '0', errorMsg: 'success', traceId: 'trace-1',
        data: { conversationId, messageId: 'msg-1', result: [{ lane: 'default', mediaType: 'text', chunk: opts.answer }], reasoningContent: opts.thinking ? [{ text: opts.thinking }] : [] },
      }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream;charset=UTF-8' });
    let id = 0;
    const send = (type: string, payload: unknown, extra: Record<string, unknown> = {}) =>
      res.write(`id:${++id}\nevent:message\ndata:${JSON.stringify({ lane: 'default', type, payload: JSON.stringify(payload), ...extra })}\n\n`);
    send('meta', { conversationId, messageId: 'msg-1', requestId: 'req-1' });
    send('header', { mediaType: 'text' });
    for (const t of opts.thinking?.match(/\S+\s*/g) ?? []) {
      res.write(`id:${++id}\nevent:message\ndata:${JSON.stringify({ type: 'thinking', payload: JSON.stringify({ ext_data: { text: t }, event: 'flow.node.llm.thinking', entity: { node_type: 'text-completion', node_name: 'llm' } }) })}\n\n`);
    }
    for (const [i, w] of words.entries()) {
      send('chunk', { conversationId, messageId: 'msg-1', text: w });
      if (opts.failWith && i === 1) {
        res.write(`id:${++id}\nevent:message\ndata:${JSON.stringify({ type: 'error', status_code: 500, message: opts.failWith, request_id: 'req-1' })}\n\n`);
        return res.end();
      }
      await sleep(1);
    }
    res.end();
  });
  fake.url = await listen(server);
  return fake;
}
