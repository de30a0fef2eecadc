import { closeWebSocket } from '@conveyor/platform-kit';
import WebSocket from 'ws';
import { z } from 'zod';

/** Satori's signals: the `op` of every frame. */
export const SATORI_OP = { EVENT: 0, PING: 1, PONG: 2, IDENTIFY: 3, READY: 4, META: 5 } as const;
/** Satori wants a PING at least every 10 s. */
const PING_EVERY_MS = 10_000;
/** No frame at all (a PONG answers every PING) for this long is a dead connection. */
const SILENT_LIMIT_MS = 30_000;
const MAX_FRAME_BYTES = 4 * 1024 * 1024;

const Frame = z.looseObject({ op: z.number().int(), body: z.unknown().optional() });
const Login = z.looseObject({ platform: z.string().max(100).optional(), self_id: z.string().max(200).optional(), user: z.looseObject({ id: z.string().max(200) }).optional(), status: z.number().optional() });
const Ready = z.looseObject({ logins: z.array(Login).max(1_000) });

/** Where the next connection of the bot goes on: the `sn` of the last event handled (IDENTIFY replays those after it). */
export const SatoriResume = z.object({ sn: z.number().int().nonnegative() });
export type SatoriResume = z.infer<typeof SatoriResume>;

/** A login READY named: the platform and the bot's own id on it. */
export interface SatoriLogin {
  platform: string;
  selfId: string;
}

export interface SatoriSocketOptions {
  /** The server's HTTP base; the socket is `/v1/events` below it. */
  endpoint: string;
  token: string;
  /** Events after this sn are replayed by the server. */
  resume?: SatoriResume;
  /** Which login to speak for when the server holds several (empty: the first). */
  want: { platform: string; selfId: string };
  /** Every event (op 0) with its sn (`sn`, or the older `id`). */
  onEvent: (body: unknown, sn: number | undefined) => void;
  onMalformed: (reason: string) => void;
  readyTimeoutMs?: number;
  pingEveryMs?: number;
}

/**
 * A Satori WebSocket client for one bot: IDENTIFY with the token (and the sn to go on from), READY
 * naming the logins, a PING every 10 s (30 s without any frame ends the socket), events. It never
 * reconnects by itself; the gateway's supervisor does.
 */
export class SatoriSocket {
  readonly ended: Promise<string>;
  private resolveEnded!: (reason: string) => void;
  private endedReason: string | undefined;
  private ping: NodeJS.Timeout | undefined;
  private lastFrameAt = Date.now();
  login: SatoriLogin = { platform: '', selfId: '' };

  private constructor(private readonly ws: WebSocket, private readonly o: SatoriSocketOptions, ready: { resolve: () => void; reject: (err: Error) => void }) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    let isReady = false;
    ws.on('open', () => this.send({ op: SATORI_OP.IDENTIFY, body: { token: o.token, ...(o.resume ? { sn: o.resume.sn, sequence: o.resume.sn } : {}) } }));
    ws.on('message', (data: Buffer) => {
      this.lastFrameAt = Date.now();
      let json: unknown;
      try {
        json = JSON.parse(data.toString('utf8'));
      } catch {
        return o.onMalformed('frame is not JSON');
      }
      const f = Frame.safeParse(json);
      if (!f.success) return o.onMalformed(`frame: ${f.error.issues[0]?.path.join('.') || '(root)'}: ${f.error.issues[0]?.message ?? 'invalid'}`);
      const { op, body } = f.data;
      if (op === SATORI_OP.READY) {
        const r = Ready.safeParse(body);
        if (!r.success) return this.fail('READY without logins');
        const logins = r.data.logins.map((l) => ({ platform: l.platform ?? '', selfId: l.user?.id ?? l.self_id ?? '' }));
        const chosen = logins.find((l) => (!o.want.platform || l.platform === o.want.platform) && (!o.want.selfId || l.selfId === o.want.selfId));
        if (!chosen) {
          const why = `the Satori server has no login ${o.want.platform || '*'}/${o.want.selfId || '*'}`;
          ready.reject(new Error(why));
          return this.fail(why);
        }
        this.login = chosen;
        isReady = true;
        this.startPing();
        return ready.resolve();
      }
      if (op === SATORI_OP.EVENT) {
        const sn = z.looseObject({ sn: z.number().int().nonnegative().optional(), id: z.number().int().nonnegative().optional() }).safeParse(body);
        return o.onEvent(body, sn.success ? (sn.data.sn ?? sn.data.id) : undefined);
      }
    });
    ws.on('close', (code, reason) => {
      // Satori servers close with 4xxx (or 1008) when the token is refused.
      const why = `Satori socket closed (${code}${reason.length ? ` ${reason.toString().slice(0, 200)}` : ''})`;
      if (!isReady) ready.reject(new Error(why));
      this.end(why);
    });
    ws.on('error', (err) => {
      if (!isReady) ready.reject(new Error(`Satori socket error: ${err.message}`));
      this.end(`Satori socket error: ${err.message}`);
    });
  }

  static connect(o: SatoriSocketOptions): Promise<SatoriSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${o.endpoint.replace(/^http/, 'ws')}/v1/events`, { handshakeTimeout: 10_000, maxPayload: MAX_FRAME_BYTES });
      let settled = false;
      const settle = (then: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        then();
      };
      const timer = setTimeout(() => settle(() => {
        ws.terminate();
        reject(new Error('no READY from the Satori server in time'));
      }), o.readyTimeoutMs ?? 30_000);
      const socket: SatoriSocket = new SatoriSocket(ws, o, { resolve: () => settle(() => resolve(socket)), reject: (err) => settle(() => reject(err)) });
    });
  }

  close(reason: string): Promise<void> {
    const closed = closeWebSocket(this.ws, 1000, reason);
    this.end(reason);
    return closed;
  }

  private startPing() {
    this.ping = setInterval(() => {
      if (Date.now() - this.lastFrameAt > SILENT_LIMIT_MS) return this.fail('nothing from the Satori server for 30 s (dead connection)');
      this.send({ op: SATORI_OP.PING });
    }, this.o.pingEveryMs ?? PING_EVERY_MS);
    this.ping.unref();
  }

  private send(frame: object) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private fail(reason: string) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(4000, reason.slice(0, 100));
    else this.ws.terminate();
    this.end(reason);
  }

  private end(reason: string) {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    clearInterval(this.ping);
    this.resolveEnded(reason);
  }
}
