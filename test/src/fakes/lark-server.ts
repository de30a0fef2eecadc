import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import protobuf from 'protobufjs';
import WebSocket, { WebSocketServer } from 'ws';
import { z } from 'zod';
import { encryptLarkEvent, larkSignature } from '@conveyor/lark';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** An Open API call the fake Lark received (after the token check). */
export interface LarkCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

/** A message the bot sent, as a user would see it now (patches applied). */
export interface LarkMessage {
  messageId: string;
  /** The message it answers (`im.message.reply`), or '' for a new one. */
  replyTo: string;
  msgType: string;
  /** The text a user reads: a text message's text, a card's markdown. */
  text: string;
  patches: number;
}

/** A frame a long-connection client sent: an answer to an event, or a ping. */
export interface LarkWsFrame {
  type: 'ack' | 'ping';
  /** The event's `message_id` header (acks). */
  messageId: string;
  /** The answer's `code` (acks). */
  code: number;
  /** The `biz_rt` header (acks). */
  bizRt: string;
  service: number;
}

/** The long-connection side of the fake. */
export interface FakeLarkWs {
  /** Sockets open now, and opened in all. */
  open: number;
  opened: number;
  /** Endpoint calls refused (wrong app id or secret). */
  refused: number;
  frames: LarkWsFrame[];
}

export interface FakeLark {
  /** The Open API base (what a bot's `custom_domain` is set to). */
  url: string;
  calls: LarkCall[];
  ws: FakeLarkWs;
  /**
   * Delivers an event over the newest open long connection as Lark does: a data frame of type
   * `event`, split in `parts` frames (`sum`/`seq`) when asked; a string body is sent as it is.
   * Returns the frames' `message_id`.
   */
  emitEvent(body: unknown, opts?: { parts?: number }): string;
  /** Sends `data` as one binary WebSocket message on the newest open long connection (bad frames). */
  emitRaw(data: Uint8Array): void;
  /** Closes every long connection from Lark's side. */
  dropConnections(): void;
  waitForWs(predicate: (ws: FakeLarkWs) => boolean, timeoutMs?: number): Promise<void>;
  /** How many tenant tokens were issued (the SDK should cache one). */
  tokensIssued(): number;
  /** Messages answering one inbound message id. */
  repliesTo(messageId: string): LarkMessage[];
  /** A file a user's message holds (`im/v1/messages/:message_id/resources/:file_key`), as Lark keeps it. */
  addResource(messageId: string, fileKey: string, bytes: Buffer, contentType: string): void;
  waitFor(predicate: (calls: LarkCall[]) => boolean, timeoutMs?: number): Promise<LarkCall[]>;
  close(): Promise<void>;
}

const Json = z.record(z.string(), z.unknown());
const Card = z.object({ config: z.object({ update_multi: z.boolean().optional() }).loose().optional(), elements: z.array(z.object({ tag: z.string(), content: z.string().optional() }).loose()) }).loose();

/** The text a user would read in a message's content, or null when the content does not fit its type. */
function readable(msgType: string, content: unknown): { text: string; shared: boolean } | null {
  if (typeof content !== 'string') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return null;
  }
  if (msgType === 'text') {
    const t = z.object({ text: z.string().min(1) }).safeParse(parsed);
    return t.success ? { text: t.data.text, shared: false } : null;
  }
  if (msgType === 'interactive') {
    const c = Card.safeParse(parsed);
    return c.success ? { text: c.data.elements.map((e) => e.content ?? '').join(''), shared: c.data.config?.update_multi === true } : null;
  }
  return null;
}

/**
 * Lark's long-connection frame, written out from the official SDKs' definition (the Node SDK's
 * generated `pbbp2` module in @larksuiteoapi/node-sdk, the Go SDK's `ws/pbbp2.pb.go`), kept apart
 * from libs/platforms/lark's copy so the fake checks the client against the protocol, not itself.
 */
const PBBP2 = protobuf.parse(`
syntax = "proto2";
package pbbp2;
message Header { required string key = 1; required string value = 2; }
message Frame {
  required uint64 SeqID = 1; required uint64 LogID = 2; required int32 service = 3; required int32 method = 4;
  repeated Header headers = 5; optional string payloadEncoding = 6; optional string payloadType = 7;
  optional bytes payload = 8; optional string LogIDNew = 9;
}
`).root.lookupType('pbbp2.Frame');
const WsFrame = z.object({
  SeqID: z.number(),
  LogID: z.number(),
  service: z.number(),
  method: z.number(),
  headers: z.array(z.object({ key: z.string(), value: z.string() })).default([]),
  payload: z.instanceof(Uint8Array).optional(),
});
type WsFrame = z.output<typeof WsFrame>;
const encodeFrame = (f: WsFrame) => PBBP2.encode(PBBP2.fromObject(f)).finish();
const decodeFrame = (data: Buffer): WsFrame | null => {
  try {
    const parsed = WsFrame.safeParse(PBBP2.toObject(PBBP2.decode(data), { longs: Number, arrays: true }));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
};
const headerOf = (f: WsFrame, key: string) => f.headers.find((h) => h.key === key)?.value ?? '';
const Ack = z.object({ code: z.number() }).loose();
/** The service id the fake's endpoint hands out; every frame of a connection carries it. */
const WS_SERVICE_ID = 7_331;

/**
 * A fake Lark / Feishu Open API speaking the real wire format: the tenant access token from
 * `POST /open-apis/auth/v3/tenant_access_token/internal`, then `Authorization: Bearer` on
 * `im/v1/messages` create, `:message_id/reply` (deduplicated by `uuid`) and `PATCH :message_id`
 * (interactive cards with `update_multi` only, as Lark allows), and `GET :message_id/resources/:file_key`
 * serving the files a test added (400 code 234003 for another). Answers `{code, msg, data}`.
 */
export async function startFakeLark(opts: { appId: string; appSecret: string; pingIntervalSeconds?: number }): Promise<FakeLark> {
  const calls: LarkCall[] = [];
  const waiters = new Waiters(() => calls, 'lark calls');
  const ws: FakeLarkWs = { open: 0, opened: 0, refused: 0, frames: [] };
  const wsWaiters = new Waiters(() => [ws], 'long-connection states');
  const tickets = new Set<string>();
  const sockets: WebSocket[] = [];
  let nextSeq = 1;
  const clientConfig = () => ({ PingInterval: opts.pingIntervalSeconds ?? 120, ReconnectCount: -1, ReconnectInterval: 120, ReconnectNonce: 30 });
  const tokens = new Set<string>();
  const messages = new Map<string, LarkMessage & { shared: boolean }>();
  const byUuid = new Map<string, string>();
  const resources = new Map<string, { bytes: Buffer; contentType: string }>();
  let nextId = 1;
  const server = createServer(async (req, res) => {
    const raw = (await readBody(req)).toString('utf8');
    const reply = (status: number, body: Record<string, unknown>) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    let body: Record<string, unknown> = {};
    if (raw) {
      try {
        body = Json.parse(JSON.parse(raw));
      } catch {
        return reply(400, { code: 9499, msg: 'Bad Request: invalid JSON' });
      }
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'POST' && url.pathname === '/callback/ws/endpoint') {
      if (body.AppID !== opts.appId || body.AppSecret !== opts.appSecret) {
        ws.refused++;
        wsWaiters.notify();
        return reply(200, { code: 514, msg: 'auth failed', data: {} });
      }
      const ticket = randomBytes(12).toString('hex');
      tickets.add(ticket);
      const wsUrl = `ws://${new URL(base).host}/ws?device_id=${randomBytes(4).toString('hex')}&service_id=${WS_SERVICE_ID}&access_key=${ticket}`;
      return reply(200, { code: 0, msg: 'ok', data: { URL: wsUrl, ClientConfig: clientConfig() } });
    }
    if (req.method === 'POST' && url.pathname === '/open-apis/auth/v3/tenant_access_token/internal') {
      if (body.app_id !== opts.appId || body.app_secret !== opts.appSecret) return reply(200, { code: 10014, msg: 'app secret invalid' });
      const token = `t-${randomBytes(12).toString('hex')}`;
      tokens.add(token);
      return reply(200, { code: 0, msg: 'ok', tenant_access_token: token, expire: 7200 });
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!tokens.has(token)) return reply(400, { code: 99991663, msg: 'Invalid access token for authorization.' });
    calls.push({ method: req.method ?? '', path: url.pathname, body });
    const send = (replyTo: string) => {
      const msgType = String(body.msg_type ?? '');
      const shown = readable(msgType, body.content);
      if (!shown) return reply(400, { code: 230001, msg: 'invalid message content' });
      const uuid = typeof body.uuid === 'string' ? body.uuid : '';
      const seen = uuid ? byUuid.get(uuid) : undefined;
      const messageId = seen ?? `om_${nextId++}`;
      if (!seen) {
        messages.set(messageId, { messageId, replyTo, msgType, text: shown.text, patches: 0, shared: shown.shared });
        if (uuid) byUuid.set(uuid, messageId);
      }
      return reply(200, { code: 0, msg: 'success', data: { message_id: messageId, msg_type: msgType, body: { content: body.content } } });
    };
    const resourceMatch = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/resources\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && resourceMatch) {
      const file = resources.get(`${decodeURIComponent(resourceMatch[1] ?? '')}/${decodeURIComponent(resourceMatch[2] ?? '')}`);
      if (url.searchParams.get('type') !== 'image' && url.searchParams.get('type') !== 'file') return reply(400, { code: 234001, msg: 'Invalid request param.' });
      if (!file) return reply(400, { code: 234003, msg: 'File not in msg.' });
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.bytes.length) });
      res.end(file.bytes);
      return waiters.notify();
    }
    const replyMatch = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(url.pathname);
    if (req.method === 'POST' && replyMatch) return send(decodeURIComponent(replyMatch[1] ?? ''));
    if (req.method === 'POST' && url.pathname === '/open-apis/im/v1/messages') {
      if (!url.searchParams.get('receive_id_type') || typeof body.receive_id !== 'string') return reply(400, { code: 230001, msg: 'receive_id_type and receive_id are required' });
      return send('');
    }
    const patchMatch = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'PATCH' && patchMatch) {
      const msg = messages.get(decodeURIComponent(patchMatch[1] ?? ''));
      if (!msg) return reply(400, { code: 230011, msg: 'message not found' });
      const shown = readable('interactive', body.content);
      if (msg.msgType !== 'interactive' || !msg.shared || !shown) return reply(400, { code: 230099, msg: 'only a shared card (update_multi) can be patched' });
      msg.text = shown.text;
      msg.patches++;
      return reply(200, { code: 0, msg: 'success', data: {} });
    }
    return reply(404, { code: 404, msg: 'not found' });
  });
  // Lark's long connection: a ticket from the endpoint opens one socket; binary pbbp2 frames only.
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const ticket = url.searchParams.get('access_key') ?? '';
    if (url.pathname !== '/ws' || !tickets.delete(ticket)) {
      socket.end('HTTP/1.1 403 Forbidden\r\nhandshake-status: 403\r\nhandshake-msg: invalid ticket\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (client) => {
      ws.open++;
      ws.opened++;
      sockets.push(client);
      wsWaiters.notify();
      client.on('message', (data, isBinary) => {
        const frame = isBinary ? decodeFrame(Buffer.isBuffer(data) ? data : Buffer.from(data.toString())) : null;
        if (!frame) return client.close(1003, 'binary pbbp2 frames only');
        const type = headerOf(frame, 'type');
        if (frame.method === 0 && type === 'ping') {
          ws.frames.push({ type: 'ping', messageId: '', code: 0, bizRt: '', service: frame.service });
          const pong: WsFrame = { SeqID: 0, LogID: 0, service: frame.service, method: 0, headers: [{ key: 'type', value: 'pong' }], payload: Buffer.from(JSON.stringify(clientConfig())) };
          client.send(encodeFrame(pong));
        } else if (frame.method === 1) {
          let code = -1;
          try {
            const ack = Ack.safeParse(JSON.parse(Buffer.from(frame.payload ?? new Uint8Array()).toString('utf8')));
            if (ack.success) code = ack.data.code;
          } catch {
            // Recorded with code -1: not an answer Lark would take.
          }
          ws.frames.push({ type: 'ack', messageId: headerOf(frame, 'message_id'), code, bizRt: headerOf(frame, 'biz_rt'), service: frame.service });
        }
        wsWaiters.notify();
      });
      client.on('close', () => {
        ws.open--;
        sockets.splice(sockets.indexOf(client), 1);
        wsWaiters.notify();
      });
    });
  });
  const newest = () => {
    const client = sockets.filter((c) => c.readyState === WebSocket.OPEN).at(-1);
    if (!client) throw new Error('no open long connection to deliver on');
    return client;
  };
  const base = await listen(server);
  return {
    addResource: (messageId, fileKey, bytes, contentType) => void resources.set(`${messageId}/${fileKey}`, { bytes, contentType }),
    url: base,
    calls,
    ws,
    emitEvent(body, o = {}) {
      const client = newest();
      const messageId = `ws_${randomBytes(8).toString('hex')}`;
      const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
      const parts = Math.max(1, Math.min(o.parts ?? 1, bytes.length));
      const size = Math.ceil(bytes.length / parts);
      for (let seq = 0; seq < parts; seq++) {
        client.send(encodeFrame({
          SeqID: nextSeq++, LogID: nextSeq, service: WS_SERVICE_ID, method: 1,
          headers: [{ key: 'type', value: 'event' }, { key: 'message_id', value: messageId }, { key: 'sum', value: String(parts) }, { key: 'seq', value: String(seq) }, { key: 'trace_id', value: randomBytes(8).toString('hex') }],
          payload: bytes.subarray(seq * size, (seq + 1) * size),
        }));
      }
      return messageId;
    },
    emitRaw(data) {
      newest().send(data, { binary: true });
    },
    dropConnections() {
      for (const c of sockets) c.terminate();
    },
    waitForWs: async (p, t = 60_000) => void (await wsWaiters.waitFor(([state]) => state !== undefined && p(state), t)),
    tokensIssued: () => tokens.size,
    repliesTo: (messageId) => [...messages.values()].filter((m) => m.replyTo === messageId).map(({ shared: _shared, ...m }) => m),
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: async () => {
      for (const c of sockets) c.terminate();
      wss.close();
      await closeServer(server);
    },
  };
}

/**
 * Sends an event the way Lark does: with an encrypt key the body is `{"encrypt": ...}` (AES-256-CBC)
 * and the request carries `X-Lark-Request-Timestamp`, `X-Lark-Request-Nonce` and `X-Lark-Signature`
 * (SHA-256 of timestamp + nonce + key + body); `signWith` signs with another key (a forgery).
 */
export function sendLarkEvent(url: string, body: unknown, opts: { encryptKey?: string; signWith?: string; rawBody?: string; unsigned?: boolean } = {}): Promise<Response> {
  const plain = opts.rawBody ?? JSON.stringify(body);
  const raw = opts.encryptKey && opts.rawBody === undefined ? JSON.stringify({ encrypt: encryptLarkEvent(opts.encryptKey, plain) }) : plain;
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  const key = opts.signWith ?? opts.encryptKey;
  if (key && !opts.unsigned) {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const nonce = randomBytes(8).toString('hex');
    headers['x-lark-request-timestamp'] = timestamp;
    headers['x-lark-request-nonce'] = nonce;
    headers['x-lark-signature'] = larkSignature(key, timestamp, nonce, Buffer.from(raw, 'utf8'));
  }
  return fetch(url, { method: 'POST', headers, body: raw });
}
