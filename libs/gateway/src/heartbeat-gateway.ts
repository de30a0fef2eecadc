import { closeWebSocket } from '@conveyor/platform-kit';
import WebSocket from 'ws';
import { z } from 'zod';

/** Frames larger than this are refused by the socket. */
const MAX_FRAME_BYTES = 8 * 1024 * 1024;

/** The Gateway refused the session for good; reconnecting with the same settings will not help. Recognised by `code`. */
export class GatewayRefusedError extends Error {
  readonly code = 'GATEWAY_REFUSED';

  constructor(readonly platform: string, readonly closeCode: number, message: string) {
    super(message);
    this.name = 'GatewayRefusedError';
  }
}

const Payload = z.looseObject({ op: z.number().int(), d: z.unknown().optional(), s: z.number().int().nullish(), t: z.string().nullish() });
const Hello = z.looseObject({ heartbeat_interval: z.number().positive().max(600_000) });
const Ready = z.looseObject({ session_id: z.string().min(1).max(256), resume_gateway_url: z.string().regex(/^wss?:\/\//).optional(), user: z.looseObject({ id: z.string().min(1).max(64) }) });

/**
 * What a session needs to be resumed by the next connection of the same bot, on this replica or the
 * one taking the bot over (stored between them as the connection's state, so parsed on the way back).
 */
export const GatewaySession = z.object({
  sessionId: z.string().min(1).max(256),
  /** The last sequence number handled; a RESUME replays the events after it. */
  seq: z.number().int().nonnegative().nullable(),
  resumeUrl: z.string().max(2048).regex(/^wss?:\/\//),
  /** The bot's own user id, to ignore its own messages among the events replayed before RESUMED. */
  botUserId: z.string().max(64),
});
export type GatewaySession = z.infer<typeof GatewaySession>;

export interface HeartbeatGatewayOptions {
  /** The platform's name in messages (`Discord`, `QQ`). */
  platform: string;
  /** The URL connected to when not resuming (the session's own resume URL is used when resuming). */
  url: string;
  /** Query parameters the platform wants on the URL (Discord's `v` and `encoding`). */
  query?: Record<string, string>;
  /** The `d` of IDENTIFY (op 2): the token, the intents, whatever the platform asks for. */
  identify: () => unknown;
  /** The token RESUME (op 6) carries, as the platform wants it written. */
  resumeToken: string;
  /** Close codes after which connecting again with the same settings cannot work, with what they mean. */
  fatalClose: Readonly<Record<number, string>>;
  /** Resumed (op 6) instead of identifying anew when given. */
  resume?: GatewaySession;
  /** Every dispatch (op 0) after READY (and those replayed before RESUMED), with its event name and sequence number. */
  onDispatch: (event: string, data: unknown, seq: number | null) => void;
  /**
   * The session begins (READY), is resumed (RESUMED, with the session given), or is gone for good
   * (undefined: the platform invalidated it or refused the bot), so the caller keeps what the next
   * connection resumes with.
   */
  onSession?: (session: GatewaySession | undefined) => void;
  /** A frame that is no Gateway payload. */
  onMalformed: (reason: string) => void;
  readyTimeoutMs?: number;
}

function withQuery(url: string, query: Record<string, string> | undefined): string {
  if (!query) return url;
  const u = new URL(url);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u.toString();
}

/**
 * A client of the opcode gateway Discord's Gateway v10 and QQ's bot gateway both speak, for one bot:
 * HELLO (op 10) → heartbeats (op 1; a missed ACK, op 11, ends the socket as a zombie), IDENTIFY (op 2)
 * or RESUME (op 6) with the session and sequence, READY/RESUMED, then dispatches (op 0); RECONNECT
 * (op 7) and INVALID_SESSION (op 9) as both define them. It never reconnects by itself: the gateway service's supervisor owns reconnection
 * (and its backoff), because only the replica holding the bot's lease may connect at all.
 */
export class HeartbeatGatewaySocket {
  readonly ended: Promise<string>;
  private resolveEnded!: (reason: string) => void;
  private endedReason: string | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private acked = true;
  private seq: number | null;
  private session: GatewaySession | undefined;

  private constructor(private readonly ws: WebSocket, private readonly o: HeartbeatGatewayOptions, ready: { resolve: () => void; reject: (err: Error) => void }) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.seq = o.resume?.seq ?? null;
    let isReady = false;
    const identify = () => this.sendOp(2, o.identify());
    ws.on('message', (data, isBinary) => {
      if (isBinary) return o.onMalformed('binary frame (compression is not requested)');
      let json: unknown;
      try {
        json = JSON.parse(data.toString());
      } catch {
        return o.onMalformed('frame is not JSON');
      }
      const p = Payload.safeParse(json);
      if (!p.success) return o.onMalformed(`payload: ${p.error.issues[0]?.path.join('.') || '(root)'}: ${p.error.issues[0]?.message ?? 'invalid'}`);
      const { op, d, s, t } = p.data;
      if (typeof s === 'number') this.seq = s;
      switch (op) {
        case 10: {
          const hello = Hello.safeParse(d);
          if (!hello.success) return this.fail(4002, 'HELLO without a heartbeat_interval');
          this.startHeartbeat(hello.data.heartbeat_interval);
          if (o.resume) this.sendOp(6, { token: o.resumeToken, session_id: o.resume.sessionId, seq: o.resume.seq });
          else identify();
          return;
        }
        case 11:
          this.acked = true;
          return;
        case 1:
          return this.sendOp(1, this.seq);
        case 7:
          return this.fail(4000, `${o.platform} asked for a reconnection`);
        case 9: {
          // Not resumable: this bot's session is gone; identifying anew on the same socket is allowed.
          if (d !== true) {
            this.session = undefined;
            o.onSession?.(undefined);
          }
          if (!isReady && d !== true) {
            this.seq = null;
            return identify();
          }
          return this.fail(4000, `${o.platform} invalidated the session`);
        }
        case 0: {
          if (t === 'READY') {
            const r = Ready.safeParse(d);
            if (!r.success) return this.fail(4002, 'READY without session_id or user');
            this.session = { sessionId: r.data.session_id, seq: this.seq, resumeUrl: r.data.resume_gateway_url ?? o.url, botUserId: r.data.user.id };
            isReady = true;
            o.onSession?.(this.session);
            return ready.resolve();
          }
          if (t === 'RESUMED') {
            this.session = o.resume;
            isReady = true;
            o.onSession?.(this.session);
            return ready.resolve();
          }
          // A resumed session's missed events are replayed before RESUMED: those are messages too.
          if ((isReady || o.resume) && t) o.onDispatch(t, d, this.seq);
          return;
        }
        default:
          return;
      }
    });
    ws.on('close', (code, reason) => {
      const fatal = o.fatalClose[code];
      if (fatal) {
        this.session = undefined;
        o.onSession?.(undefined);
      }
      const why = fatal ? `${o.platform} closed the Gateway with ${code}: ${fatal}` : `Gateway closed (${code}${reason.length ? ` ${reason.toString().slice(0, 200)}` : ''})`;
      if (!isReady) ready.reject(fatal ? new GatewayRefusedError(o.platform, code, why) : new Error(why));
      this.end(why);
    });
    ws.on('error', (err) => {
      if (!isReady) ready.reject(new Error(`Gateway socket error: ${err.message}`));
      this.end(`Gateway socket error: ${err.message}`);
    });
  }

  /** Connects and resolves once READY (or RESUMED) arrived; a refusal before that rejects. */
  static connect(o: HeartbeatGatewayOptions): Promise<HeartbeatGatewaySocket> {
    return new Promise((resolve, reject) => {
      const url = withQuery(o.resume?.resumeUrl ?? o.url, o.query);
      const ws = new WebSocket(url, { handshakeTimeout: 10_000, maxPayload: MAX_FRAME_BYTES });
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        ws.terminate();
        reject(new Error(`no READY from the ${o.platform} Gateway in time`));
      }, o.readyTimeoutMs ?? 30_000);
      const socket = new HeartbeatGatewaySocket(ws, o, {
        resolve: () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(socket);
        },
        reject: (err) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          reject(err);
        },
      });
    });
  }

  /** The session to resume with after this socket ended; undefined once the platform ended it for good. */
  resumable(): GatewaySession | undefined {
    return this.session ? { ...this.session, seq: this.seq } : undefined;
  }

  get botUserId(): string {
    return this.session?.botUserId ?? this.o.resume?.botUserId ?? '';
  }

  close(reason: string): Promise<void> {
    // 4000 keeps the session resumable for the replica taking over; 1000 would end it (Discord).
    const closed = closeWebSocket(this.ws, 4000, reason);
    this.end(reason);
    return closed;
  }

  private startHeartbeat(intervalMs: number) {
    clearInterval(this.heartbeat);
    this.acked = true;
    this.heartbeat = setInterval(() => {
      if (!this.acked) return this.fail(4000, `no heartbeat ACK from the ${this.o.platform} Gateway (zombied connection)`);
      this.acked = false;
      this.sendOp(1, this.seq);
    }, intervalMs);
    this.heartbeat.unref();
  }

  private sendOp(op: number, d: unknown) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ op, d }));
  }

  private fail(code: number, reason: string) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(code, reason.slice(0, 100));
    else this.ws.terminate();
    this.end(reason);
  }

  private end(reason: string) {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    clearInterval(this.heartbeat);
    this.resolveEnded(reason);
  }
}
