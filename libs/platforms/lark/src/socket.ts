import { closeWebSocket } from '@conveyor/platform-kit';
import WebSocket from 'ws';
import { z } from 'zod';
import {
  LARK_FRAME_CONTROL,
  LARK_FRAME_DATA,
  LarkEventAssembler,
  decodeLarkFrame,
  encodeLarkFrame,
  frameHeader,
  larkAckFrame,
  larkPingFrame,
  type LarkFrame,
} from './frame.js';

/** The endpoint call and the WebSocket handshake each get this long. */
const CONNECT_TIMEOUT_MS = 15_000;
/** Frames larger than this are refused by the socket (an event part is far smaller). */
const MAX_FRAME_BYTES = 8 * 1024 * 1024;
/** Complete events of one connection waiting for their turn; past this Lark is told to deliver again later. */
export const MAX_QUEUED_EVENTS = 1_000;
/** Lark's PingInterval is obeyed within these bounds, so a bad value neither floods nor starves the socket. */
const MIN_PING_INTERVAL_MS = 1_000;
const MAX_PING_INTERVAL_MS = 600_000;
/** Lark's default when it names none. */
const DEFAULT_PING_INTERVAL_MS = 120_000;
/** Ping intervals without any frame from Lark after which the socket counts as dead. */
const SILENT_PINGS = 3;

/** Lark refused to hand out a long connection (wrong app secret, app not in long-connection mode, too many connections). Recognised by `code`. */
export class LarkEndpointError extends Error {
  readonly code = 'LARK_ENDPOINT_REFUSED';

  constructor(readonly larkCode: number, message: string) {
    super(message);
    this.name = 'LarkEndpointError';
  }
}

const ClientConfig = z.object({
  PingInterval: z.number().optional(),
  ReconnectCount: z.number().optional(),
  ReconnectInterval: z.number().optional(),
  ReconnectNonce: z.number().optional(),
}).loose();

/** Lark's answer; `data` is only read when `code` is 0 (a refusal carries an empty one). */
const EndpointAnswer = z.object({ code: z.number().int(), msg: z.string().max(2_000).optional(), data: z.unknown() }).loose();
const EndpointData = z.object({ URL: z.string().regex(/^wss?:\/\//).max(4_000), ClientConfig: ClientConfig.nullish() }).loose();
const firstIssue = (e: z.ZodError) => `${e.issues[0]?.path.join('.') || 'body'}: ${e.issues[0]?.message ?? 'invalid'}`;

const pingMs = (seconds: number | undefined) => Math.min(MAX_PING_INTERVAL_MS, Math.max(MIN_PING_INTERVAL_MS, seconds !== undefined && seconds > 0 ? seconds * 1000 : DEFAULT_PING_INTERVAL_MS));

export interface LarkEndpoint {
  url: string;
  /** The service id every frame of this connection carries (the URL's `service_id`). */
  service: number;
  pingIntervalMs: number;
}

/**
 * `POST {domain}/callback/ws/endpoint` with the app's id and secret: the WebSocket URL (a short-lived
 * ticket in its query) and the client settings. Lark's ReconnectCount/Interval are not used: the
 * gateway's supervisor decides when to connect again.
 */
export async function fetchLarkEndpoint(apiBase: string, appId: string, appSecret: string): Promise<LarkEndpoint> {
  const res = await fetch(`${apiBase}/callback/ws/endpoint`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', locale: 'zh' },
    body: JSON.stringify({ AppID: appId, AppSecret: appSecret }),
    signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS),
  });
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    throw new Error(`Lark long-connection endpoint answered HTTP ${res.status} without JSON`);
  }
  const answer = EndpointAnswer.safeParse(json);
  if (!answer.success) throw new Error(`Lark long-connection endpoint answered HTTP ${res.status}: ${firstIssue(answer.error)}`);
  const { code, msg } = answer.data;
  if (code !== 0) throw new LarkEndpointError(code, `Lark refused the long connection: code ${code}${msg ? ` ${msg}` : ''}`);
  const parsed = EndpointData.safeParse(answer.data.data);
  if (!parsed.success) throw new Error(`Lark long-connection endpoint answered code 0 without a usable data.${firstIssue(parsed.error)}`);
  const data = parsed.data;
  const service = Number(new URL(data.URL).searchParams.get('service_id') ?? '0');
  return { url: data.URL, service: Number.isSafeInteger(service) ? service : 0, pingIntervalMs: pingMs(data.ClientConfig?.PingInterval) };
}

export interface LarkSocketOptions {
  endpoint: LarkEndpoint;
  /**
   * A whole event (its parts joined): resolves with the status Lark is answered with, 200 when the
   * event was taken (or can never be), another when Lark should deliver it again.
   */
  onEvent: (payload: Buffer) => Promise<number>;
  /** A frame or event that cannot be understood (logged and counted by the caller). */
  onMalformed: (reason: string) => void;
}

/**
 * One long connection of a Lark app: binary pbbp2 frames; a ping every PingInterval (a pong may
 * change the interval); events, split or whole, handed on one at a time in arrival order and each
 * answered with its own frame once handled. It never reconnects by itself: the gateway's supervisor
 * owns reconnection, because only the replica holding the bot's lease may connect at all.
 */
export class LarkSocket {
  readonly ended: Promise<string>;
  private resolveEnded!: (reason: string) => void;
  private endedReason: string | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private pingIntervalMs: number;
  private lastFrameAt = Date.now();
  private readonly assembler = new LarkEventAssembler();
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;

  private constructor(private readonly ws: WebSocket, private readonly o: LarkSocketOptions) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.pingIntervalMs = o.endpoint.pingIntervalMs;
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('close', (code, reason) => this.end(`Lark closed the long connection (${code}${reason.length ? ` ${reason.toString().slice(0, 200)}` : ''})`));
    ws.on('error', (err) => this.end(`long connection error: ${err.message}`));
    this.ping();
  }

  /** Opens the WebSocket the endpoint named; resolves once it is open. */
  static connect(o: LarkSocketOptions): Promise<LarkSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(o.endpoint.url, { handshakeTimeout: CONNECT_TIMEOUT_MS, maxPayload: MAX_FRAME_BYTES });
      const failed = (err: Error) => {
        ws.removeAllListeners();
        // A late error of the abandoned socket must have a listener, or it would throw.
        ws.on('error', () => {});
        ws.terminate();
        // The URL carries a connection ticket: only the reason is reported.
        reject(new Error(`Lark long connection failed: ${err.message.replace(/wss?:\/\/\S+/g, '<url>')}`));
      };
      ws.once('error', failed);
      ws.once('open', () => {
        ws.off('error', failed);
        resolve(new LarkSocket(ws, o));
      });
    });
  }

  close(reason: string): Promise<void> {
    const closed = closeWebSocket(this.ws, 1000, reason);
    this.end(reason);
    return closed;
  }

  private onMessage(data: WebSocket.RawData, isBinary: boolean) {
    this.lastFrameAt = Date.now();
    if (!isBinary) return this.o.onMalformed('text frame (Lark sends binary pbbp2 frames)');
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data);
    const frame = decodeLarkFrame(bytes);
    if (!frame) return this.o.onMalformed('frame is not a pbbp2 frame');
    const type = frameHeader(frame, 'type');
    if (frame.method === LARK_FRAME_CONTROL) {
      if (type === 'pong') this.onPong(frame);
      return;
    }
    if (frame.method !== LARK_FRAME_DATA) return this.o.onMalformed(`frame method ${frame.method}`);
    // Card callbacks need an answer the pipeline does not give; only events are taken.
    if (type !== 'event') return;
    const part = this.assembler.add(frame);
    if (part.kind === 'partial') return;
    if (part.kind === 'invalid') return this.o.onMalformed(`event parts: ${part.reason}`);
    const started = Date.now();
    if (this.queued >= MAX_QUEUED_EVENTS) {
      this.o.onMalformed(`more than ${MAX_QUEUED_EVENTS} events waiting; Lark will deliver this one again`);
      return this.send(larkAckFrame(frame, 500, Date.now() - started));
    }
    this.queued++;
    this.queue = this.queue
      .then(() => this.o.onEvent(part.payload))
      .catch(() => 500)
      .then((status) => this.send(larkAckFrame(frame, status, Date.now() - started)))
      .finally(() => void this.queued--);
  }

  private onPong(frame: LarkFrame) {
    if (!frame.payload?.byteLength) return;
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(frame.payload).toString('utf8'));
    } catch {
      return this.o.onMalformed('pong payload is not JSON');
    }
    const config = ClientConfig.safeParse(json);
    if (config.success && config.data.PingInterval !== undefined) this.pingIntervalMs = pingMs(config.data.PingInterval);
  }

  private ping() {
    if (this.endedReason !== undefined) return;
    if (Date.now() - this.lastFrameAt > SILENT_PINGS * this.pingIntervalMs) return this.fail(`no frame from Lark in ${SILENT_PINGS} ping intervals (dead connection)`);
    this.send(larkPingFrame(this.o.endpoint.service));
    this.pingTimer = setTimeout(() => this.ping(), this.pingIntervalMs);
    this.pingTimer.unref();
  }

  private send(frame: LarkFrame) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(encodeLarkFrame(frame));
  }

  private fail(reason: string) {
    this.ws.terminate();
    this.end(reason);
  }

  private end(reason: string) {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    clearTimeout(this.pingTimer);
    this.resolveEnded(reason);
  }
}
