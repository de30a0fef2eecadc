import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { deflateSync } from 'node:zlib';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, listen, readJsonObject, closeWebSocketServer } from './http-util.js';

/** A REST call the fake answered, as received. */
export interface KookCall {
  method: string;
  /** The path below `/api/v3` (`/message/create`). */
  path: string;
  body: Record<string, any>;
  /** The token of `Authorization: Bot <token>`. */
  token: string;
  status: number;
  at: number;
}

/** A message the bot sent, as KOOK shows it. */
export interface KookShownMessage {
  id: string;
  /** `channel` for `/message/create`, `direct` for `/direct-message/create`. */
  kind: 'channel' | 'direct';
  targetId: string;
  type: number;
  content: string;
  quote: string | undefined;
}

export interface KookMessageInput {
  /** A channel message when given (GROUP); else a direct message to the bot (PERSON). */
  channelId?: string;
  authorId: string;
  username?: string;
  content: string;
  /** 1 text, 9 KMarkdown (default), 2 image (content is the URL), 255 a system event. */
  type?: number;
  /** User ids in `extra.mention`. */
  mention?: string[];
  bot?: boolean;
}

interface Session {
  id: string;
  token: string;
  sn: number;
  events: { sn: number; frame: string }[];
  socket: WebSocket | undefined;
  compress: boolean;
}

export interface KookSessionStats {
  open: number;
  maxOpen: number;
  /** Sessions begun (HELLO to a connection without `resume`). */
  begun: number;
  resumes: number;
  lastResumed?: string;
  /** PINGs received, with the sn they carried last. */
  pings: number;
  lastPingSn?: number;
}

export interface FakeKook {
  /** The REST base (`http://127.0.0.1:<port>/api/v3`), a bot's `api_base_url`. */
  apiBase: string;
  botUserId: string;
  calls: KookCall[];
  sessions: { opened: number; byToken: Map<string, KookSessionStats>; rejected: Map<string, number> };
  /** Sends an event to the latest session of `token`, numbered with its next sn; returns the message id. A session whose socket is gone keeps it for a resume. */
  emitMessage(token: string, m: KookMessageInput): string;
  /** Sends `d` as an event of `token`'s latest session, numbered with its next sn (for events that are not well-formed messages). */
  emitEvent(token: string, d: object): void;
  /** Sends a frame as it is to the sockets of `token` (for bad input). */
  emitRaw(token: string, frame: string | Buffer): void;
  latestSession(token: string): string | undefined;
  /** Cuts the sockets of `token` without a close frame (a network drop); the sessions stay resumable. */
  dropConnections(token: string): void;
  /** Ends `token`'s sessions: the next resume of one gets RECONNECT. */
  expireSessions(token: string): void;
  shown(): KookShownMessage[];
  waitFor(predicate: (calls: KookCall[]) => boolean, timeoutMs?: number): Promise<KookCall[]>;
  waitForSessions(predicate: (s: FakeKook['sessions']) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const MAX_EVENTS_KEPT = 1_000;

/**
 * A fake KOOK: REST below `/api/v3` (`/gateway/index`, `/user/me`, `/message/create`,
 * `/direct-message/create`, every call recorded; `Authorization: Bot <token>` checked, KOOK's
 * `{ code, message, data }` envelope) and the WebSocket at `/gateway?compress=&token=`: the token in
 * the URL is the connection token `/gateway/index` handed out (an unknown one gets HELLO code 40101),
 * HELLO with a session id, PING answered with PONG, frames zlib-deflated when `compress=1`, and a
 * reconnection with `resume=1&sn=&session_id=` followed by RESUME replaying the events after that sn
 * and RESUME ACK (an unknown or expired session gets RECONNECT).
 */
export async function startFakeKook(opts: { tokens: string[]; botUserId?: string }): Promise<FakeKook> {
  const valid = new Set(opts.tokens);
  const botUserId = opts.botUserId ?? '1000001';
  const calls: KookCall[] = [];
  const waiters = new Waiters(() => calls, 'KOOK REST calls');
  const state: FakeKook['sessions'] = { opened: 0, byToken: new Map(), rejected: new Map() };
  const stateWaiters = new Waiters(() => [state], 'KOOK sessions');
  const notify = () => stateWaiters.notify();
  /** Connection tokens `/gateway/index` handed out → the bot token. */
  const connectionTokens = new Map<string, string>();
  const sessions = new Map<string, Session>();
  const counted = new Map<WebSocket, string>();
  const shown: KookShownMessage[] = [];
  let nextId = 1;
  const stats = (token: string) => {
    let s = state.byToken.get(token);
    if (!s) state.byToken.set(token, (s = { open: 0, maxOpen: 0, begun: 0, resumes: 0, pings: 0 }));
    return s;
  };

  const server = createServer((req, res) => void handle(req, res).catch(() => { res.statusCode = 500; res.end(); }));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/^\/api\/v3/, '');
    const body = await readJsonObject(req);
    const auth = /^Bot (.+)$/.exec(req.headers.authorization ?? '');
    const token = auth?.[1] ?? '';
    const reply = (status: number, code: number, message: string, data?: object) => {
      calls.push({ method: req.method ?? '', path, body, token, status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ code, message, data: data ?? {} }));
      waiters.notify();
    };
    if (!valid.has(token)) return reply(401, 401, '你的用户凭证不正确');
    if (req.method === 'GET' && path === '/gateway/index') {
      const conn = randomUUID();
      connectionTokens.set(conn, token);
      const { port } = new URL(base);
      return reply(200, 0, 'ok', { url: `ws://127.0.0.1:${port}/gateway?compress=${url.searchParams.get('compress') === '0' ? 0 : 1}&token=${conn}` });
    }
    if (req.method === 'GET' && path === '/user/me') return reply(200, 0, 'ok', { id: botUserId, username: 'conveyor-bot', identify_num: '0001', bot: true });
    if (req.method === 'POST' && (path === '/message/create' || path === '/direct-message/create')) {
      if (typeof body.target_id !== 'string' || typeof body.content !== 'string' || body.content.length === 0) return reply(200, 40000, '参数错误: target_id, content');
      const m: KookShownMessage = { id: `m-${nextId++}`, kind: path === '/message/create' ? 'channel' : 'direct', targetId: body.target_id, type: Number(body.type ?? 1), content: body.content, quote: body.quote };
      shown.push(m);
      return reply(200, 0, 'ok', { msg_id: m.id, msg_timestamp: Date.now(), nonce: '' });
    }
    return reply(404, 404, 'not found');
  };

  const encode = (s: Session, frame: string) => (s.compress ? deflateSync(frame) : frame);
  const sendTo = (ws: WebSocket, compress: boolean, payload: object) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(compress ? deflateSync(JSON.stringify(payload)) : JSON.stringify(payload));
  };
  const event = (s: Session, d: object) => {
    const sn = ++s.sn;
    const frame = JSON.stringify({ s: 0, d, sn });
    s.events.push({ sn, frame });
    if (s.events.length > MAX_EVENTS_KEPT) s.events.shift();
    if (s.socket?.readyState === WebSocket.OPEN) s.socket.send(encode(s, frame));
  };
  const attach = (s: Session, ws: WebSocket) => {
    s.socket = ws;
    const st = stats(s.token);
    st.open++;
    st.maxOpen = Math.max(st.maxOpen, st.open);
    counted.set(ws, s.token);
  };

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/gateway')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws, new URL(req.url ?? '/', 'http://x').searchParams));
  });

  const onSocket = (ws: WebSocket, q: URLSearchParams) => {
    state.opened++;
    const compress = q.get('compress') !== '0';
    const token = connectionTokens.get(q.get('token') ?? '');
    let session: Session | undefined;
    let resuming = false;
    ws.on('close', () => {
      if (session && session.socket === ws) session.socket = undefined;
      const t = counted.get(ws);
      if (t !== undefined) {
        counted.delete(ws);
        stats(t).open--;
      }
      notify();
    });
    if (!token) {
      state.rejected.set(q.get('token') ?? '', (state.rejected.get(q.get('token') ?? '') ?? 0) + 1);
      sendTo(ws, compress, { s: 1, d: { code: 40101 } });
      notify();
      return void setTimeout(() => ws.close(1008, 'invalid token'), 50);
    }
    if (q.get('resume') === '1') {
      const known = sessions.get(q.get('session_id') ?? '');
      if (!known || known.token !== token || (known.socket && known.socket.readyState === WebSocket.OPEN)) {
        sendTo(ws, compress, { s: 5, d: { code: 40106, err: 'resume failed' } });
        notify();
        return void setTimeout(() => ws.close(1000, 'resume failed'), 50);
      }
      session = known;
      session.compress = compress;
      resuming = true;
      attach(session, ws);
      sendTo(ws, compress, { s: 1, d: { code: 0, session_id: session.id } });
    } else {
      session = { id: randomUUID(), token, sn: 0, events: [], socket: undefined, compress };
      sessions.set(session.id, session);
      attach(session, ws);
      stats(token).begun++;
      sendTo(ws, compress, { s: 1, d: { code: 0, session_id: session.id } });
    }
    notify();
    ws.on('message', (data, isBinary) => {
      let p: { s: number; sn?: number };
      try {
        p = JSON.parse(isBinary ? Buffer.from(data as Buffer).toString() : data.toString());
      } catch {
        return ws.close(1003, 'not JSON');
      }
      const s = session!;
      if (p.s === 2) {
        const st = stats(s.token);
        st.pings++;
        st.lastPingSn = Number(p.sn ?? 0);
        notify();
        return sendTo(ws, compress, { s: 3 });
      }
      if (p.s === 4 && resuming) {
        resuming = false;
        const st = stats(s.token);
        st.resumes++;
        st.lastResumed = s.id;
        for (const e of s.events) if (e.sn > Number(p.sn ?? 0)) ws.send(encode(s, e.frame));
        sendTo(ws, compress, { s: 6, d: { session_id: s.id } });
        notify();
      }
    });
  };

  const base = await listen(server);
  const latest = (token: string) => [...sessions.values()].filter((s) => s.token === token).at(-1);

  return {
    apiBase: `${base}/api/v3`,
    botUserId,
    calls,
    sessions: state,
    emitMessage(token, m) {
      const id = `in-${nextId++}`;
      const group = m.channelId !== undefined;
      const d = {
        channel_type: group ? 'GROUP' : 'PERSON',
        type: m.type ?? 9,
        target_id: group ? m.channelId : botUserId,
        author_id: m.authorId,
        content: m.content,
        msg_id: id,
        msg_timestamp: Date.now(),
        nonce: '',
        extra: {
          type: m.type ?? 9,
          ...(group ? { guild_id: 'guild-1', channel_name: `channel-${m.channelId}` } : { code: 'chat-code' }),
          mention: m.mention ?? [],
          mention_all: false,
          mention_roles: [],
          mention_here: false,
          author: { id: m.authorId, username: m.username ?? `user${m.authorId}`, identify_num: '1234', nickname: m.username ?? `user${m.authorId}`, bot: m.bot ?? false },
        },
      };
      const s = latest(token);
      if (s) event(s, d);
      return id;
    },
    emitEvent(token, d) {
      const s = latest(token);
      if (s) event(s, d);
    },
    emitRaw(token, frame) {
      for (const s of sessions.values()) if (s.token === token && s.socket?.readyState === WebSocket.OPEN) s.socket.send(frame);
    },
    latestSession: (token) => latest(token)?.id,
    dropConnections(token) {
      for (const s of sessions.values()) if (s.token === token) s.socket?.terminate();
    },
    expireSessions(token) {
      for (const [id, s] of sessions) if (s.token === token) sessions.delete(id);
    },
    shown: () => shown,
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForSessions: (predicate, timeoutMs = 60_000) => stateWaiters.waitFor(([st]) => predicate(st), timeoutMs).then(() => undefined),
    close: () => closeWebSocketServer(wss, server),
  };
}
