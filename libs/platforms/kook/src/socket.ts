import { inflateSync } from 'node:zlib';
import { closeWebSocket } from '@conveyor/platform-kit';
import WebSocket from 'ws';
import { z } from 'zod';

/** KOOK's signals: the `s` of every frame. */
export const KOOK_SIGNAL = { EVENT: 0, HELLO: 1, PING: 2, PONG: 3, RESUME: 4, RECONNECT: 5, RESUME_ACK: 6 } as const;
/** A PING every 30 s carrying the latest sn; KOOK expects it that often. */
export const KOOK_PING_EVERY_MS = 30_000;
/** A PONG that does not come within this is a dead connection. */
const PONG_TIMEOUT_MS = 6_000;
/** Frames (inflated) larger than this are refused. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** Events that arrived ahead of a missing sn wait at most this long or this many for it; then the gap is skipped. */
const GAP_WAIT_MS = 5_000;
const MAX_AHEAD = 1_000;

/** HELLO codes that no reconnection with the same token fixes. */
const FATAL_HELLO: Readonly<Record<number, string>> = {
  40100: 'parameters missing',
  40101: 'invalid token',
  40102: 'token verification failed',
};

/** KOOK refused the connection (HELLO with an error code). Recognised by `code`. */
export class KookGatewayError extends Error {
  readonly code = 'KOOK_GATEWAY_REFUSED';

  constructor(readonly helloCode: number, message: string) {
    super(message);
    this.name = 'KookGatewayError';
  }

  get permanent(): boolean {
    return FATAL_HELLO[this.helloCode] !== undefined;
  }
}

const Frame = z.looseObject({ s: z.number().int(), d: z.unknown().optional(), sn: z.number().int().nonnegative().optional() });
const Hello = z.looseObject({ code: z.number().int(), session_id: z.string().max(256).optional() });

/**
 * What a session needs to be resumed by the next connection of the bot, on this replica or the one
 * taking it over (stored between them as the connection's state, so parsed on the way back).
 */
export const KookSession = z.object({
  sessionId: z.string().min(1).max(256),
  /** The last sn handled; a resume replays the events after it. */
  sn: z.number().int().nonnegative(),
});
export type KookSession = z.infer<typeof KookSession>;

export interface KookSocketOptions {
  /** The URL `/gateway/index` gave (it carries the connection's own token). */
  url: string;
  /** Resumed (the URL's `resume`, `sn`, `session_id`, then a RESUME signal) instead of a new session. */
  resume?: KookSession;
  /** Every event (signal 0), in sn order, each sn once. */
  onEvent: (data: unknown, sn: number) => void;
  /** The session began or was resumed; undefined: KOOK ended it (RECONNECT), the next connection starts anew. */
  onSession?: (session: KookSession | undefined) => void;
  /** A frame that is no KOOK signal. */
  onMalformed: (reason: string) => void;
  readyTimeoutMs?: number;
  pingEveryMs?: number;
}

/** The gateway URL with the resume parameters KOOK wants on reconnection. */
export function resumeUrl(url: string, session: KookSession): string {
  const u = new URL(url);
  u.searchParams.set('resume', '1');
  u.searchParams.set('sn', String(session.sn));
  u.searchParams.set('session_id', session.sessionId);
  return u.toString();
}

/** A frame as JSON text: text frames as they are, binary ones zlib-inflated (`compress=1`). */
export function frameText(data: Buffer, isBinary: boolean): string {
  return isBinary ? inflateSync(data, { maxOutputLength: MAX_FRAME_BYTES }).toString('utf8') : data.toString('utf8');
}

/**
 * A KOOK WebSocket client for one bot: HELLO (its code checked), RESUME by sn when resuming and its
 * ACK, events delivered in sn order (those ahead of a gap wait briefly for it, duplicates dropped),
 * a PING every 30 s with the latest sn (a missing PONG ends the socket), RECONNECT ending the
 * session. It never reconnects by itself: the gateway's supervisor does, with its backoff, because
 * only the replica holding the bot's lease may connect.
 */
export class KookSocket {
  readonly ended: Promise<string>;
  private resolveEnded!: (reason: string) => void;
  private endedReason: string | undefined;
  private ping: NodeJS.Timeout | undefined;
  private pongDue: NodeJS.Timeout | undefined;
  private gapTimer: NodeJS.Timeout | undefined;
  private sn: number;
  private readonly ahead = new Map<number, unknown>();
  private session: KookSession | undefined;

  private constructor(private readonly ws: WebSocket, private readonly o: KookSocketOptions, ready: { resolve: () => void; reject: (err: Error) => void }) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.sn = o.resume?.sn ?? 0;
    let isReady = false;
    const begin = (sessionId: string) => {
      this.session = { sessionId, sn: this.sn };
      isReady = true;
      this.startPing();
      o.onSession?.(this.session);
      ready.resolve();
    };
    ws.on('message', (data: Buffer, isBinary) => {
      let json: unknown;
      try {
        json = JSON.parse(frameText(data, isBinary));
      } catch {
        return o.onMalformed(isBinary ? 'binary frame that does not inflate to JSON' : 'frame is not JSON');
      }
      const f = Frame.safeParse(json);
      if (!f.success) return o.onMalformed(`frame: ${f.error.issues[0]?.path.join('.') || '(root)'}: ${f.error.issues[0]?.message ?? 'invalid'}`);
      const { s, d, sn } = f.data;
      switch (s) {
        case KOOK_SIGNAL.HELLO: {
          const hello = Hello.safeParse(d);
          if (!hello.success) return this.fail('HELLO without a code');
          if (hello.data.code !== 0) {
            const why = `KOOK refused the connection with HELLO code ${hello.data.code}${FATAL_HELLO[hello.data.code] ? `: ${FATAL_HELLO[hello.data.code]}` : ''}`;
            ready.reject(new KookGatewayError(hello.data.code, why));
            return this.fail(why);
          }
          const sessionId = hello.data.session_id ?? o.resume?.sessionId;
          if (!sessionId) return this.fail('HELLO without a session_id');
          if (o.resume) return this.send({ s: KOOK_SIGNAL.RESUME, sn: this.sn });
          return begin(sessionId);
        }
        case KOOK_SIGNAL.RESUME_ACK:
          if (!isReady && o.resume) begin(o.resume.sessionId);
          return;
        case KOOK_SIGNAL.PONG:
          clearTimeout(this.pongDue);
          this.pongDue = undefined;
          return;
        case KOOK_SIGNAL.RECONNECT:
          // The session is gone (expired, sn too old): the next connection starts a new one.
          this.session = undefined;
          o.onSession?.(undefined);
          ready.reject(new Error('KOOK asked for a new session (RECONNECT)'));
          return this.fail('KOOK asked for a new session (RECONNECT)');
        case KOOK_SIGNAL.EVENT:
          // Events replayed after a RESUME come before its ACK; they are messages too.
          if (sn === undefined) return o.onMalformed('event without an sn');
          return this.onEvent(d, sn);
        default:
          return;
      }
    });
    ws.on('close', (code, reason) => {
      const why = `KOOK socket closed (${code}${reason.length ? ` ${reason.toString().slice(0, 200)}` : ''})`;
      if (!isReady) ready.reject(new Error(why));
      this.end(why);
    });
    ws.on('error', (err) => {
      if (!isReady) ready.reject(new Error(`KOOK socket error: ${err.message}`));
      this.end(`KOOK socket error: ${err.message}`);
    });
  }

  /** Connects and resolves once the session began (HELLO) or was resumed (RESUME ACK); a refusal before that rejects. */
  static connect(o: KookSocketOptions): Promise<KookSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(o.resume ? resumeUrl(o.url, o.resume) : o.url, { handshakeTimeout: 10_000, maxPayload: MAX_FRAME_BYTES });
      let settled = false;
      const timer = setTimeout(() => settle(() => {
        ws.terminate();
        reject(new Error('no HELLO from KOOK in time'));
      }), o.readyTimeoutMs ?? 30_000);
      const settle = (then: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        then();
      };
      const socket: KookSocket = new KookSocket(ws, o, {
        resolve: () => settle(() => resolve(socket)),
        reject: (err) => settle(() => reject(err)),
      });
    });
  }

  /** The session to resume after this socket ended, with the latest sn delivered; undefined once KOOK ended it. */
  resumable(): KookSession | undefined {
    return this.session ? { ...this.session, sn: this.sn } : undefined;
  }

  close(reason: string): Promise<void> {
    const closed = closeWebSocket(this.ws, 1000, reason);
    this.end(reason);
    return closed;
  }

  private onEvent(d: unknown, sn: number) {
    if (sn <= this.sn || this.ahead.has(sn)) return;
    // KOOK numbers a session's events one by one: an sn this far ahead is no event of this session,
    // and taking it would make every real one after it look like a duplicate.
    if (this.sn !== 0 && sn > this.sn + MAX_AHEAD) return this.o.onMalformed(`event sn ${sn} is far ahead of ${this.sn}; dropped`);
    if (sn !== this.sn + 1 && this.sn !== 0) {
      this.ahead.set(sn, d);
      if (this.ahead.size >= MAX_AHEAD) return this.skipGap();
      this.gapTimer ??= setTimeout(() => this.skipGap(), GAP_WAIT_MS);
      this.gapTimer.unref();
      return;
    }
    this.deliver(d, sn);
    this.flushAhead();
  }

  private deliver(d: unknown, sn: number) {
    this.sn = sn;
    this.o.onEvent(d, sn);
  }

  private flushAhead() {
    while (this.ahead.has(this.sn + 1)) {
      const next = this.sn + 1;
      const d = this.ahead.get(next);
      this.ahead.delete(next);
      this.deliver(d, next);
    }
    if (this.ahead.size === 0) {
      clearTimeout(this.gapTimer);
      this.gapTimer = undefined;
    }
  }

  /** The missing sn did not come: the events after it go on, in order. */
  private skipGap() {
    clearTimeout(this.gapTimer);
    this.gapTimer = undefined;
    const first = Math.min(...this.ahead.keys());
    if (!Number.isFinite(first)) return;
    this.o.onMalformed(`events ${this.sn + 1}..${first - 1} never arrived; going on after them`);
    this.sn = first - 1;
    this.flushAhead();
  }

  private startPing() {
    clearInterval(this.ping);
    this.ping = setInterval(() => {
      this.send({ s: KOOK_SIGNAL.PING, sn: this.sn });
      this.pongDue ??= setTimeout(() => this.fail('no PONG from KOOK (dead connection)'), PONG_TIMEOUT_MS);
      this.pongDue.unref();
    }, this.o.pingEveryMs ?? KOOK_PING_EVERY_MS);
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
    clearTimeout(this.pongDue);
    clearTimeout(this.gapTimer);
    this.resolveEnded(reason);
  }
}
