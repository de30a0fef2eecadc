import WebSocket from 'ws';
import { z } from 'zod';
import { closeWebSocket } from '@conveyor/platform-kit';

/** Frames larger than this are refused by the socket; an Events API body is far smaller. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** Slack sends `hello` right after the upgrade; a socket without one in this time is given up. */
const HELLO_TIMEOUT_MS = 15_000;
/**
 * A ping goes to Slack this often; a socket that answered none of the previous one is a dead link
 * (no close ever arrives on a half-open TCP connection), so it ends and the supervisor reconnects.
 */
const PING_INTERVAL_MS = 20_000;

/**
 * One Socket Mode envelope as Slack sends it: `events_api` (payload = the Events API body a webhook
 * gets), `slash_commands`, `interactive`. Slack redelivers one it got no acknowledgement for, with
 * `retry_attempt` counting up and `retry_reason` saying why.
 */
export const SlackEnvelope = z.looseObject({
  type: z.string().min(1).max(100),
  envelope_id: z.string().min(1).max(200),
  payload: z.unknown(),
  accepts_response_payload: z.boolean().optional(),
  retry_attempt: z.number().int().nonnegative().optional(),
  retry_reason: z.string().max(200).optional(),
});
export type SlackEnvelope = z.output<typeof SlackEnvelope>;

const FrameType = z.looseObject({ type: z.string().max(100) });
const Disconnect = z.looseObject({ type: z.literal('disconnect'), reason: z.string().max(200).optional() });

/** What one text frame of a Socket Mode connection is. */
export type SocketModeFrame =
  | { kind: 'hello' }
  /** Slack is about to close the link (`refresh_requested`, `warning`, `link_disabled`): open a new one. */
  | { kind: 'disconnect'; reason: string }
  | { kind: 'envelope'; envelope: SlackEnvelope }
  | { kind: 'malformed'; reason: string; envelopeId?: string };

const issue = (e: z.ZodError) => {
  const first = e.issues[0];
  return `${first?.path.join('.') || '(root)'}: ${first?.message ?? 'invalid'}`;
};

/** Reads one text frame: never throws; a frame that is no JSON object or no envelope is `malformed` with the reason. */
export function parseSocketModeFrame(text: string): SocketModeFrame {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { kind: 'malformed', reason: 'frame is not JSON' };
  }
  const head = FrameType.safeParse(json);
  if (!head.success) return { kind: 'malformed', reason: `frame: ${issue(head.error)}` };
  if (head.data.type === 'hello') return { kind: 'hello' };
  if (head.data.type === 'disconnect') {
    const d = Disconnect.safeParse(json);
    return { kind: 'disconnect', reason: d.success ? d.data.reason ?? 'unspecified' : 'unspecified' };
  }
  const envelope = SlackEnvelope.safeParse(json);
  if (!envelope.success) {
    const id = z.looseObject({ envelope_id: z.string().min(1).max(200) }).safeParse(json);
    return { kind: 'malformed', reason: `${head.data.type} envelope: ${issue(envelope.error)}`, ...(id.success ? { envelopeId: id.data.envelope_id } : {}) };
  }
  return { kind: 'envelope', envelope: envelope.data };
}

export interface SocketModeOptions {
  /** The `wss://` URL `apps.connections.open` returned (it carries a one-use ticket: never log it). */
  url: string;
  onEnvelope: (envelope: SlackEnvelope) => void;
  onMalformed: (reason: string, envelopeId?: string) => void;
  helloTimeoutMs?: number;
  pingIntervalMs?: number;
}

/**
 * One Socket Mode WebSocket of a Slack app: resolves once Slack said `hello`, hands every envelope
 * on, acknowledges one when told to, and ends on Slack's `disconnect`, a close, an error or a dead
 * link. It never reconnects by itself: the gateway's supervisor owns reconnection and its backoff,
 * because only the replica holding the bot's lease may connect at all.
 */
export class SlackSocketModeSocket {
  readonly ended: Promise<string>;
  private resolveEnded!: (reason: string) => void;
  private endedReason: string | undefined;
  private pinger: NodeJS.Timeout | undefined;
  private ponged = true;

  private constructor(private readonly ws: WebSocket, private readonly o: SocketModeOptions, hello: { resolve: () => void; reject: (err: Error) => void }) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    let greeted = false;
    ws.on('pong', () => (this.ponged = true));
    ws.on('message', (data, isBinary) => {
      // After a disconnect nothing more is taken: what is not acknowledged Slack sends on the next connection.
      if (this.endedReason !== undefined) return;
      if (isBinary) return o.onMalformed('binary frame');
      const frame = parseSocketModeFrame(data.toString());
      switch (frame.kind) {
        case 'hello':
          greeted = true;
          this.startPings();
          return hello.resolve();
        case 'disconnect':
          return this.finish(`Slack asked for a new connection (${frame.reason})`);
        case 'envelope':
          return o.onEnvelope(frame.envelope);
        case 'malformed':
          return o.onMalformed(frame.reason, frame.envelopeId);
      }
    });
    ws.on('close', (code, reason) => {
      const why = `Socket Mode connection closed (${code}${reason.length ? ` ${reason.toString().slice(0, 200)}` : ''})`;
      if (!greeted) hello.reject(new Error(why));
      this.end(why);
    });
    ws.on('error', (err) => {
      if (!greeted) hello.reject(new Error(`Socket Mode socket error: ${err.message}`));
      this.end(`Socket Mode socket error: ${err.message}`);
    });
  }

  /** Connects and resolves once Slack's `hello` arrived; a refusal or silence before that rejects. */
  static connect(o: SocketModeOptions): Promise<SlackSocketModeSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(o.url, { handshakeTimeout: 10_000, maxPayload: MAX_FRAME_BYTES });
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
      };
      const timer = setTimeout(() => settle(() => {
        ws.terminate();
        reject(new Error('no hello from Slack Socket Mode in time'));
      }), o.helloTimeoutMs ?? HELLO_TIMEOUT_MS);
      const socket = new SlackSocketModeSocket(ws, o, {
        resolve: () => settle(() => resolve(socket)),
        reject: (err) => settle(() => reject(err)),
      });
    });
  }

  /** Acknowledges an envelope (`{envelope_id}`); false when the socket is no longer open, so Slack will redeliver it. */
  ack(envelopeId: string): boolean {
    if (this.ws.readyState !== WebSocket.OPEN || this.endedReason !== undefined) return false;
    this.ws.send(JSON.stringify({ envelope_id: envelopeId }));
    return true;
  }

  close(reason: string): Promise<void> {
    const closed = closeWebSocket(this.ws, 1000, reason);
    this.end(reason);
    return closed;
  }

  private startPings() {
    clearInterval(this.pinger);
    this.pinger = setInterval(() => {
      if (!this.ponged) {
        this.ws.terminate();
        return this.end('no pong from Slack (dead link)');
      }
      this.ponged = false;
      this.ws.ping();
    }, this.o.pingIntervalMs ?? PING_INTERVAL_MS);
    this.pinger.unref();
  }

  /** Ends the connection from our side: a normal close, and nothing more is handed on or acknowledged. */
  private finish(reason: string) {
    void closeWebSocket(this.ws, 1000, reason);
    this.end(reason);
  }

  private end(reason: string) {
    if (this.endedReason !== undefined) return;
    this.endedReason = reason;
    clearInterval(this.pinger);
    this.resolveEnded(reason);
  }
}
