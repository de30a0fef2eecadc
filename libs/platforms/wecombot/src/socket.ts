import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import WebSocket from 'ws';
import { closeWebSocket } from '@conveyor/platform-kit';

// The WeCom AI bot's long connection: JSON frames `{cmd, headers: {req_id}, body}` over one
// WebSocket. The bot signs in with `aibot_subscribe`, keeps the connection with `ping` every 30
// seconds, receives `aibot_msg_callback` / `aibot_event_callback`, and answers with
// `aibot_respond_msg` under the callback's req_id. WeCom acknowledges every frame it is sent with
// `{headers: {req_id}, errcode, errmsg}`.

export const WECOM_BOT_CMD = {
  subscribe: 'aibot_subscribe',
  ping: 'ping',
  messageCallback: 'aibot_msg_callback',
  eventCallback: 'aibot_event_callback',
  respond: 'aibot_respond_msg',
  send: 'aibot_send_msg',
} as const;

/** A frame WeCom sends: a callback (with `cmd`) or the acknowledgement of one of ours (without). */
export const WecomBotFrame = z.object({
  cmd: z.string().max(100).optional(),
  headers: z.object({ req_id: z.string().max(500).default('') }).loose().default({ req_id: '' }),
  body: z.unknown().optional(),
  errcode: z.number().optional(),
  errmsg: z.string().max(2_000).optional(),
}).loose();
export type WecomBotFrame = z.output<typeof WecomBotFrame>;

/** WeCom refused a frame (errcode other than 0); recognised by `code`. */
export class WecomBotRefusedError extends Error {
  readonly code = 'WECOM_BOT_REFUSED';

  constructor(readonly cmd: string, readonly errcode: number, errmsg: string) {
    super(`WeCom refused ${cmd} (errcode ${errcode})${errmsg ? `: ${errmsg}` : ''}`);
    this.name = 'WecomBotRefusedError';
  }
}

export interface WecomBotSocketOptions {
  url: string;
  botId: string;
  secret: string;
  /** Each callback frame (`aibot_msg_callback`, `aibot_event_callback`), and frames that are not JSON. */
  onCallback: (received: WecomBotReceived) => void;
  handshakeTimeoutMs?: number;
  /** LangBot's client pings every 30 s and gives the connection up after two pings without an answer. */
  pingIntervalMs?: number;
  ackTimeoutMs?: number;
  /** Frames awaiting WeCom's acknowledgement at once; more are refused rather than queued without bound. */
  maxPending?: number;
}

/** A callback frame, or why what arrived is none. */
export type WecomBotReceived = { kind: 'callback'; frame: WecomBotFrame } | { kind: 'malformed'; reason: string };

interface Pending {
  cmd: string;
  resolve: (frame: WecomBotFrame) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** A req_id as LangBot's client makes them: the command, then random hex. */
export function reqIdFor(cmd: string): string {
  return `${cmd}_${randomBytes(8).toString('hex')}`;
}

/** One signed-in long connection: frames matched to their acknowledgements by req_id, each with a timeout. */
export class WecomBotSocket {
  private readonly pending = new Map<string, Pending>();
  private endedReason: string | undefined;
  private resolveEnded!: (reason: string) => void;
  readonly ended: Promise<string>;
  private readonly pinger: NodeJS.Timeout;
  private missedPongs = 0;

  private constructor(private readonly ws: WebSocket, private readonly o: WecomBotSocketOptions) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    ws.on('message', (data) => this.receive(data.toString()));
    ws.on('close', (code, reason) => this.end(`closed by WeCom (${code}${reason.length ? ` ${reason.toString()}` : ''})`));
    ws.on('error', (err) => this.end(`socket error: ${err.message}`));
    this.pinger = setInterval(() => {
      if (this.missedPongs >= 2) {
        ws.terminate();
        return this.end('WeCom stopped answering pings');
      }
      this.missedPongs++;
      this.request(WECOM_BOT_CMD.ping, undefined).then(() => (this.missedPongs = 0), () => undefined);
    }, o.pingIntervalMs ?? 30_000);
    this.pinger.unref();
  }

  /** Opens the WebSocket and signs in; rejects with WeCom's refusal (a wrong secret) or a timeout. */
  static async connect(o: WecomBotSocketOptions): Promise<WecomBotSocket> {
    const ws = await new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(o.url, { handshakeTimeout: o.handshakeTimeoutMs ?? 10_000, maxPayload: 4 * 1024 * 1024 });
      const fail = (err: Error) => {
        socket.removeAllListeners();
        socket.on('error', () => undefined);
        socket.terminate();
        reject(err);
      };
      socket.once('unexpected-response', (_req, res) => fail(new Error(`WeCom refused the long connection: HTTP ${res.statusCode}`)));
      socket.once('error', fail);
      socket.once('open', () => {
        socket.removeAllListeners();
        resolve(socket);
      });
    });
    const socket = new WecomBotSocket(ws, o);
    try {
      await socket.request(WECOM_BOT_CMD.subscribe, { bot_id: o.botId, secret: o.secret });
    } catch (err) {
      await socket.close('the sign-in failed');
      throw err;
    }
    return socket;
  }

  /**
   * Sends one frame and resolves with WeCom's acknowledgement; rejects when WeCom refuses it (a
   * WecomBotRefusedError), on a timeout or on a closed socket. `onWritten` runs once the frame was
   * handed to the operating system.
   */
  request(cmd: string, body: unknown, reqId: string = reqIdFor(cmd), onWritten?: () => void): Promise<WecomBotFrame> {
    if (this.endedReason !== undefined) return Promise.reject(new Error(`WeCom long connection closed: ${this.endedReason}`));
    if (this.pending.size >= (this.o.maxPending ?? 256)) return Promise.reject(new Error('too many WeCom frames awaiting an acknowledgement'));
    if (this.pending.has(reqId)) return Promise.reject(new Error(`a frame with req_id ${reqId} is already awaiting its acknowledgement`));
    const timeoutMs = this.o.ackTimeoutMs ?? 10_000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(reqId);
        reject(new Error(`WeCom did not acknowledge ${cmd} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(reqId, { cmd, resolve, reject, timer });
      this.ws.send(JSON.stringify({ cmd, headers: { req_id: reqId }, ...(body === undefined ? {} : { body }) }), (err) => {
        if (!err) return onWritten?.();
        clearTimeout(timer);
        this.pending.delete(reqId);
        reject(err);
      });
    });
  }

  async close(reason: string): Promise<void> {
    this.end(reason);
    await closeWebSocket(this.ws, 1000, reason);
  }

  private receive(text: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return this.o.onCallback({ kind: 'malformed', reason: 'not JSON' });
    }
    const parsed = WecomBotFrame.safeParse(raw);
    if (!parsed.success) return this.o.onCallback({ kind: 'malformed', reason: `not a frame: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` });
    const frame = parsed.data;
    if (frame.cmd) return this.o.onCallback({ kind: 'callback', frame });
    const waiting = this.pending.get(frame.headers.req_id);
    if (!waiting) return;
    this.pending.delete(frame.headers.req_id);
    clearTimeout(waiting.timer);
    if ((frame.errcode ?? 0) !== 0) waiting.reject(new WecomBotRefusedError(waiting.cmd, frame.errcode ?? -1, frame.errmsg ?? ''));
    else waiting.resolve(frame);
  }

  private end(reason: string): void {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    clearInterval(this.pinger);
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error(`WeCom long connection closed: ${reason}`));
      this.pending.delete(id);
    }
    this.resolveEnded(reason);
  }
}
