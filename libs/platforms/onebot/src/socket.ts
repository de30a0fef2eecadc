import { closeWebSocket } from '@conveyor/platform-kit';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { parseFrame, type ActionResponse, type Frame } from './parse.js';

/** An action the implementation answered with `status: failed`; recognised by `code`. */
export class OneBotActionError extends Error {
  readonly code = 'ONEBOT_ACTION_FAILED';

  constructor(readonly action: string, readonly retcode: number, detail: string) {
    super(`OneBot ${action} failed (retcode ${retcode})${detail ? `: ${detail}` : ''}`);
    this.name = 'OneBotActionError';
  }
}

export interface OneBotSocketOptions {
  url: string;
  /** Sent as `Authorization: Bearer …` when not empty. */
  accessToken: string;
  /** Every frame that is not the answer to one of our actions. */
  onFrame: (frame: Exclude<Frame, { kind: 'response' }>) => void;
  handshakeTimeoutMs?: number;
  /** Actions awaiting their answer at once; more are refused rather than queued without bound. */
  maxPendingActions?: number;
  /** A peer that does not answer a WebSocket ping within this long is taken as gone. */
  pingIntervalMs?: number;
}

interface Pending {
  action: string;
  resolve: (data: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * A OneBot v11 forward WebSocket client: plain JSON frames, actions matched to their answers by
 * `echo`, each with a timeout, at most `maxPendingActions` in flight, and a ping so a silently dead
 * peer is noticed within two intervals.
 */
export class OneBotSocket {
  private readonly pending = new Map<string, Pending>();
  private endedReason: string | undefined;
  private resolveEnded!: (reason: string) => void;
  readonly ended: Promise<string>;
  private pinger: NodeJS.Timeout | undefined;

  private constructor(private readonly ws: WebSocket, private readonly o: OneBotSocketOptions) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.o.onFrame({ kind: 'malformed', reason: 'binary frame' });
      const frame = parseFrame(data.toString());
      if (frame.kind === 'response') this.settle(frame.response);
      else this.o.onFrame(frame);
    });
    ws.on('close', (code, reason) => this.end(`closed by the peer (${code}${reason.length ? ` ${reason.toString()}` : ''})`));
    ws.on('error', (err) => this.end(`socket error: ${err.message}`));
    let alive = true;
    ws.on('pong', () => (alive = true));
    this.pinger = setInterval(() => {
      if (!alive) {
        ws.terminate();
        return this.end('the peer stopped answering pings');
      }
      alive = false;
      ws.ping();
    }, o.pingIntervalMs ?? 15_000);
    this.pinger.unref();
  }

  /** Wraps a connection the implementation opened to us (reverse WebSocket). */
  static accept(ws: WebSocket, o: Omit<OneBotSocketOptions, 'url' | 'accessToken' | 'handshakeTimeoutMs'>): OneBotSocket {
    return new OneBotSocket(ws, { ...o, url: '', accessToken: '' });
  }

  static connect(o: OneBotSocketOptions): Promise<OneBotSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(o.url, {
        handshakeTimeout: o.handshakeTimeoutMs ?? 10_000,
        maxPayload: 16 * 1024 * 1024,
        headers: o.accessToken ? { authorization: `Bearer ${o.accessToken}` } : {},
      });
      const fail = (err: Error) => {
        ws.removeAllListeners();
        ws.on('error', () => undefined);
        ws.terminate();
        reject(err);
      };
      ws.once('unexpected-response', (_req, res) => fail(new Error(`the OneBot server refused the connection: HTTP ${res.statusCode}`)));
      ws.once('error', fail);
      ws.once('open', () => {
        ws.removeAllListeners();
        resolve(new OneBotSocket(ws, o));
      });
    });
  }

  /**
   * Calls an action and resolves with its `data`; rejects on `status: failed`, a timeout or a closed
   * socket. `onWritten` runs once the request was handed to the operating system.
   */
  call(action: string, params: Record<string, unknown>, timeoutMs = 10_000, onWritten?: () => void): Promise<unknown> {
    if (this.endedReason !== undefined) return Promise.reject(new Error(`OneBot connection closed: ${this.endedReason}`));
    if (this.pending.size >= (this.o.maxPendingActions ?? 256)) return Promise.reject(new Error('too many OneBot actions awaiting an answer'));
    const echo = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(echo);
        reject(new Error(`OneBot ${action} got no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(echo, { action, resolve, reject, timer });
      this.ws.send(JSON.stringify({ action, params, echo }), (err) => {
        if (!err) return onWritten?.();
        clearTimeout(timer);
        this.pending.delete(echo);
        reject(err);
      });
    });
  }

  async close(reason: string): Promise<void> {
    await closeWebSocket(this.ws, 1000, reason);
    this.end(`closed: ${reason}`);
  }

  private settle(r: ActionResponse & { echo: string }): void {
    const p = this.pending.get(r.echo);
    if (!p) return;
    this.pending.delete(r.echo);
    clearTimeout(p.timer);
    if (r.status === 'ok' || r.status === 'async') p.resolve(r.data);
    else p.reject(new OneBotActionError(p.action, r.retcode, r.wording ?? r.message ?? ''));
  }

  private end(reason: string): void {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    if (this.pinger) clearInterval(this.pinger);
    for (const [echo, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new Error(`OneBot connection closed before ${p.action} was answered: ${reason}`));
      this.pending.delete(echo);
    }
    this.resolveEnded(reason);
  }
}
