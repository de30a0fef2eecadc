import { closeWebSocket } from '@conveyor/platform-kit';
import WebSocket from 'ws';
import { z } from 'zod';

/** The topic robot messages arrive on. */
export const DINGTALK_ROBOT_TOPIC = '/v1.0/im/bot/messages/get';
/** Frames larger than this are refused by the socket (a robot message is a few KiB). */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** A WebSocket ping goes out this often; a socket that answered none since the previous one is ended as dead. */
const KEEPALIVE_MS = 30_000;
/** Opening the connection (the open call and the WebSocket handshake) must not hang the supervisor. */
const OPEN_TIMEOUT_MS = 15_000;
/** Characters of an error answer kept in a message. */
const ERROR_BODY_CHARS = 300;

const Frame = z.looseObject({
  specVersion: z.string().max(50).optional(),
  type: z.string().max(50),
  headers: z.looseObject({
    topic: z.string().max(1_000).default(''),
    messageId: z.string().max(1_000).default(''),
  }),
  data: z.string().max(MAX_FRAME_BYTES).default(''),
});

/** What a downstream frame asks of the client. */
export type FrameAction =
  /** Answer at once with this frame (a `ping` echoed, an EVENT acknowledged). */
  | { kind: 'reply'; frame: object }
  /** A CALLBACK to handle; acknowledge it (`callbackAck`) once handled. */
  | { kind: 'callback'; topic: string; messageId: string; data: string }
  /** DingTalk is about to close this connection: end it, the gateway connects anew. */
  | { kind: 'disconnect'; reason: string }
  | { kind: 'ignore' }
  | { kind: 'malformed'; reason: string };

/** The acknowledgement of a CALLBACK: without it DingTalk delivers the message again. */
export function callbackAck(messageId: string): object {
  return { code: 200, headers: { contentType: 'application/json', messageId }, message: 'OK', data: JSON.stringify({ response: null }) };
}

/**
 * One downstream frame of DingTalk's Stream protocol read: `{specVersion, type, headers: {topic,
 * messageId, ...}, data}`. SYSTEM `ping` is echoed with its data, SYSTEM `disconnect` ends the
 * connection, an EVENT is acknowledged as handled, a CALLBACK is handed to the caller.
 */
export function readFrame(raw: string): FrameAction {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { kind: 'malformed', reason: 'frame is not JSON' };
  }
  const f = Frame.safeParse(json);
  if (!f.success) return { kind: 'malformed', reason: `frame: ${f.error.issues[0]?.path.join('.') || '(root)'}: ${f.error.issues[0]?.message ?? 'invalid'}` };
  const { type, headers, data } = f.data;
  switch (type) {
    case 'SYSTEM':
      if (headers.topic === 'ping') return { kind: 'reply', frame: { code: 200, headers, message: 'OK', data } };
      if (headers.topic === 'disconnect') return { kind: 'disconnect', reason: 'DingTalk asked the client to reconnect (disconnect)' };
      return { kind: 'ignore' };
    case 'EVENT':
      if (!headers.messageId) return { kind: 'malformed', reason: 'EVENT without headers.messageId' };
      return { kind: 'reply', frame: { code: 200, headers: { contentType: 'application/json', messageId: headers.messageId }, message: 'OK', data: JSON.stringify({ status: 'SUCCESS', message: 'success' }) } };
    case 'CALLBACK':
      if (!headers.messageId) return { kind: 'malformed', reason: 'CALLBACK without headers.messageId' };
      return { kind: 'callback', topic: headers.topic, messageId: headers.messageId, data };
    default:
      return { kind: 'malformed', reason: `frame type ${type.slice(0, 50)}` };
  }
}

const Endpoint = z.looseObject({ endpoint: z.string().regex(/^wss?:\/\/\S+$/, 'endpoint: a ws(s) URL'), ticket: z.string().min(1).max(2_000) });
const ApiError = z.looseObject({ code: z.string().max(200).optional(), message: z.string().max(10_000).optional() });

/** DingTalk refused to open a Stream connection (wrong credentials, no Stream robot). Recognised by `code`. */
export class DingtalkStreamOpenError extends Error {
  readonly code = 'DINGTALK_STREAM_OPEN_REFUSED';

  constructor(readonly status: number, readonly dingtalkCode: string | undefined, message: string) {
    super(message);
    this.name = 'DingtalkStreamOpenError';
  }
}

export interface DingtalkStreamOptions {
  apiBaseUrl: string;
  clientId: string;
  clientSecret: string;
  fetchImpl?: typeof fetch;
  /** A CALLBACK frame; it is acknowledged once the promise resolves, and not at all when it rejects (DingTalk then delivers it again). */
  onCallback: (topic: string, data: string) => Promise<void>;
  onMalformed: (reason: string) => void;
  /** A callback that could not be handled (logged by the caller). */
  onCallbackFailed: (err: unknown) => void;
}

/**
 * DingTalk's Stream mode for one app, over `ws`: `POST /v1.0/gateway/connections/open` with the
 * app's credentials and the robot topic gives an endpoint and a one-time ticket, the WebSocket to it
 * carries the frames (see `readFrame`). Written here instead of using the `dingtalk-stream` SDK: the
 * SDK opens connections at a fixed api.dingtalk.com URL (so neither a proxy nor a test can stand in),
 * reconnects by itself out of sight of the gateway's supervisor, which alone may connect (only the
 * replica holding the bot's lease), and writes to the console. It never reconnects by itself.
 */
export class DingtalkStreamSocket {
  readonly ended: Promise<string>;
  private resolveEnded!: (reason: string) => void;
  private endedReason: string | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  private alive = true;

  private constructor(private readonly ws: WebSocket, private readonly o: DingtalkStreamOptions) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return o.onMalformed('binary frame');
      this.handle(readFrame(data.toString()));
    });
    ws.on('pong', () => (this.alive = true));
    ws.on('close', (code, reason) => this.end(`Stream connection closed (${code}${reason.length ? ` ${reason.toString().slice(0, 200)}` : ''})`));
    ws.on('error', (err) => this.end(`Stream socket error: ${err.message}`));
    this.keepalive = setInterval(() => {
      if (!this.alive) return this.fail('no pong from DingTalk within the keepalive interval (dead connection)');
      this.alive = false;
      if (this.ws.readyState === WebSocket.OPEN) this.ws.ping();
    }, KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** Opens the connection: resolves once the WebSocket is open; a refusal of the open call rejects. */
  static async open(o: DingtalkStreamOptions): Promise<DingtalkStreamSocket> {
    const fetchImpl = o.fetchImpl ?? fetch;
    const res = await fetchImpl(`${o.apiBaseUrl}/v1.0/gateway/connections/open`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ clientId: o.clientId, clientSecret: o.clientSecret, subscriptions: [{ type: 'CALLBACK', topic: DINGTALK_ROBOT_TOPIC }], ua: 'conveyor/0.1' }),
      signal: AbortSignal.timeout(OPEN_TIMEOUT_MS),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const e = ApiError.safeParse(json);
      const code = e.success ? e.data.code : undefined;
      const detail = e.success && e.data.message ? e.data.message.slice(0, ERROR_BODY_CHARS) : text.slice(0, ERROR_BODY_CHARS);
      throw new DingtalkStreamOpenError(res.status, code, `DingTalk refused to open a Stream connection: HTTP ${res.status}${code ? ` ${code}` : ''}: ${detail}`);
    }
    const ep = Endpoint.safeParse(json);
    if (!ep.success) throw new Error(`DingTalk's connections/open answer: ${ep.error.issues[0]?.message ?? 'no endpoint and ticket'}`);
    const sep = ep.data.endpoint.includes('?') ? '&' : '?';
    const ws = new WebSocket(`${ep.data.endpoint}${sep}ticket=${encodeURIComponent(ep.data.ticket)}`, { handshakeTimeout: OPEN_TIMEOUT_MS, maxPayload: MAX_FRAME_BYTES });
    // Listening from the start: DingTalk may send a frame right behind the handshake.
    const socket = new DingtalkStreamSocket(ws, o);
    await new Promise<void>((resolve, reject) => {
      if (ws.readyState === WebSocket.OPEN) return resolve();
      ws.once('open', () => resolve());
      void socket.ended.then((reason) => reject(new Error(reason)));
    });
    return socket;
  }

  close(reason: string): Promise<void> {
    const closed = closeWebSocket(this.ws, 1000, reason);
    this.end(reason);
    return closed;
  }

  private handle(action: FrameAction) {
    switch (action.kind) {
      case 'reply':
        return this.send(action.frame);
      case 'disconnect':
        return this.fail(action.reason);
      case 'malformed':
        return this.o.onMalformed(action.reason);
      case 'callback':
        this.o.onCallback(action.topic, action.data).then(
          () => this.send(callbackAck(action.messageId)),
          (err: unknown) => this.o.onCallbackFailed(err),
        );
        return;
      default:
        return;
    }
  }

  private send(frame: object) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private fail(reason: string) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000, reason.slice(0, 100));
    else this.ws.terminate();
    this.end(reason);
  }

  private end(reason: string) {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    clearInterval(this.keepalive);
    this.resolveEnded(reason);
  }
}
