import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, listen, readJsonObject, closeWebSocketServer } from './http-util.js';

/** A `message.create` call the fake answered. */
export interface SatoriCall {
  path: string;
  body: Record<string, any>;
  token: string;
  platform: string;
  selfId: string;
  status: number;
}

export interface SatoriConnectionStats {
  open: number;
  maxOpen: number;
  /** IDENTIFYs without an sn (a fresh start) and with one (going on after it). */
  fresh: number;
  resumed: number;
  lastResumedSn?: number;
  pings: number;
}

export interface SatoriMessageInput {
  channelId: string;
  /** A direct chat (channel type 1); else a text channel (type 0). */
  direct?: boolean;
  userId: string;
  content: string;
}

export interface FakeSatori {
  /** The server's HTTP base, a bot's `endpoint`. */
  endpoint: string;
  platform: string;
  selfId: string;
  calls: SatoriCall[];
  connections: Map<string, SatoriConnectionStats>;
  rejected: number;
  /** Emits a `message-created` event to `token`'s logins, numbered with the next sn; returns the message id. */
  emitMessage(token: string, m: SatoriMessageInput): string;
  /** Emits an event body as it is (for bad input), numbered with the next sn like every event. */
  emitEvent(token: string, body: object): void;
  emitRaw(token: string, frame: string): void;
  dropConnections(token: string): void;
  /** Messages the bot sent (their content as sent). */
  sent(): SatoriCall[];
  waitFor(predicate: (calls: SatoriCall[]) => boolean, timeoutMs?: number): Promise<SatoriCall[]>;
  waitForConnections(predicate: (c: FakeSatori['connections']) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const MAX_EVENTS_KEPT = 1_000;

/**
 * A fake Satori server: `/v1/events` (IDENTIFY checked against the tokens, READY with one login,
 * PING → PONG, events numbered by `sn`, an IDENTIFY with `sn` replaying the events after it) and
 * `POST /v1/message.create` (Bearer token and the `Satori-Platform` / `Satori-User-ID` headers checked).
 */
export async function startFakeSatori(opts: { tokens: string[]; platform?: string; selfId?: string }): Promise<FakeSatori> {
  const valid = new Set(opts.tokens);
  const platform = opts.platform ?? 'fakechat';
  const selfId = opts.selfId ?? '1000';
  const calls: SatoriCall[] = [];
  const waiters = new Waiters(() => calls, 'Satori API calls');
  const connections = new Map<string, SatoriConnectionStats>();
  const connWaiters = new Waiters(() => [connections], 'Satori connection states');
  const events = new Map<string, { sn: number; frame: string }[]>();
  const sockets = new Map<WebSocket, string>();
  let sn = 0;
  let nextId = 1;
  const state = { rejected: 0 };
  const stats = (token: string) => {
    let s = connections.get(token);
    if (!s) connections.set(token, (s = { open: 0, maxOpen: 0, fresh: 0, resumed: 0, pings: 0 }));
    return s;
  };

  const server = createServer((req, res) => void handle(req, res).catch(() => { res.statusCode = 500; res.end(); }));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readJsonObject(req);
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const call: SatoriCall = { path: url.pathname, body, token, platform: String(req.headers['satori-platform'] ?? ''), selfId: String(req.headers['satori-user-id'] ?? ''), status: 0 };
    const reply = (status: number, json: unknown) => {
      call.status = status;
      calls.push(call);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      waiters.notify();
    };
    if (!valid.has(token)) return reply(401, { message: 'unauthorized' });
    if (req.method === 'POST' && url.pathname === '/v1/message.create') {
      if (call.platform !== platform || call.selfId !== selfId) return reply(400, { message: 'unknown login' });
      if (typeof body.channel_id !== 'string' || typeof body.content !== 'string' || !body.content) return reply(400, { message: 'channel_id and content required' });
      return reply(200, [{ id: `sent-${nextId++}`, content: body.content }]);
    }
    return reply(404, { message: 'not found' });
  };

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/v1/events')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws));
  });
  const onSocket = (ws: WebSocket) => {
    let token: string | undefined;
    ws.on('message', (data) => {
      let p: { op: number; body?: any };
      try {
        p = JSON.parse(data.toString());
      } catch {
        return ws.close(4000, 'not JSON');
      }
      if (p.op === 1) {
        if (token) stats(token).pings++;
        return ws.send(JSON.stringify({ op: 2 }));
      }
      if (p.op === 3 && token === undefined) {
        const t = String(p.body?.token ?? '');
        if (!valid.has(t)) {
          state.rejected++;
          connWaiters.notify();
          return ws.close(4004, 'invalid token');
        }
        token = t;
        sockets.set(ws, t);
        const st = stats(t);
        st.open++;
        st.maxOpen = Math.max(st.maxOpen, st.open);
        const from = typeof p.body?.sn === 'number' ? p.body.sn : undefined;
        if (from === undefined) st.fresh++;
        else {
          st.resumed++;
          st.lastResumedSn = from;
        }
        ws.send(JSON.stringify({ op: 4, body: { logins: [{ sn: 0, platform, user: { id: selfId, name: 'conveyor-bot', is_bot: true }, status: 1 }] } }));
        if (from !== undefined) for (const e of events.get(t) ?? []) if (e.sn > from) ws.send(e.frame);
        connWaiters.notify();
      }
    });
    ws.on('close', () => {
      const t = sockets.get(ws);
      if (t !== undefined) {
        sockets.delete(ws);
        stats(t).open--;
      }
      connWaiters.notify();
    });
  };

  const push = (token: string, body: object) => {
    const n = ++sn;
    const frame = JSON.stringify({ op: 0, body: { ...body, sn: n, id: n } });
    const list = events.get(token) ?? [];
    list.push({ sn: n, frame });
    if (list.length > MAX_EVENTS_KEPT) list.shift();
    events.set(token, list);
    for (const [ws, t] of sockets) if (t === token && ws.readyState === WebSocket.OPEN) ws.send(frame);
  };
  const endpoint = await listen(server);
  return {
    endpoint,
    platform,
    selfId,
    calls,
    connections,
    get rejected() {
      return state.rejected;
    },
    emitMessage(token, m) {
      const id = `msg-${nextId++}`;
      push(token, {
        type: 'message-created', platform, self_id: selfId, timestamp: Date.now(),
        login: { platform, user: { id: selfId } },
        channel: { id: m.channelId, type: m.direct ? 1 : 0, ...(m.direct ? {} : { name: `channel ${m.channelId}` }) },
        ...(m.direct ? {} : { guild: { id: 'guild-1', name: 'Guild' } }),
        user: { id: m.userId, name: `user${m.userId}` },
        message: { id, content: m.content },
      });
      return id;
    },
    emitEvent: (token, body) => push(token, body),
    emitRaw(token, frame) {
      for (const [ws, t] of sockets) if (t === token && ws.readyState === WebSocket.OPEN) ws.send(frame);
    },
    dropConnections(token) {
      for (const [ws, t] of sockets) if (t === token) ws.terminate();
    },
    sent: () => calls.filter((c) => c.path === '/v1/message.create' && c.status === 200),
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForConnections: (predicate, timeoutMs = 60_000) => connWaiters.waitFor(([c]) => predicate(c), timeoutMs).then(() => undefined),
    close: () => closeWebSocketServer(wss, server),
  };
}
