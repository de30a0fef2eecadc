import { randomUUID, sign, createPrivateKey } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, listen, readJsonObject, closeWebSocketServer } from './http-util.js';

/** A QQ OpenAPI call the fake answered, as received. */
export interface QqCall {
  method: string;
  path: string;
  body: Record<string, any>;
  /** The access token of `Authorization: QQBot <token>`. */
  token: string;
  status: number;
  at: number;
}

/** A message the bot sent, with the passive reply ids it carried. */
export interface QqShownMessage {
  kind: 'group' | 'c2c' | 'channel' | 'dm';
  targetId: string;
  content: string;
  msgId: string | undefined;
  msgSeq: number | undefined;
}

export interface QqApp {
  appid: string;
  secret: string;
}

export interface QqGatewayStats {
  open: number;
  maxOpen: number;
  identifies: number;
  resumes: number;
  lastResumed?: string;
}

export interface FakeQq {
  /** The OpenAPI base, a bot's `api_base_url`. */
  apiBase: string;
  /** The access token endpoint, a bot's `auth_url`. */
  authUrl: string;
  calls: QqCall[];
  /** Access tokens handed out, per appid. */
  tokenFetches: Map<string, number>;
  gateway: { byApp: Map<string, QqGatewayStats>; rejected: number };
  /** Sends a dispatch to the latest session of `appid`'s WebSocket (kept for a RESUME while its socket is gone). */
  emitEvent(appid: string, t: string, d: object): void;
  latestSession(appid: string): string | undefined;
  dropConnections(appid: string): void;
  shown(): QqShownMessage[];
  waitFor(predicate: (calls: QqCall[]) => boolean, timeoutMs?: number): Promise<QqCall[]>;
  waitForGateway(predicate: (g: FakeQq['gateway']) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const MAX_EVENTS_KEPT = 1_000;
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** What QQ signs a callback with: the Ed25519 key whose seed is the bot secret repeated to 32 bytes. */
function qqSign(secret: string, message: Buffer): string {
  let seed = Buffer.from(secret);
  while (seed.length < 32) seed = Buffer.concat([seed, seed]);
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed.subarray(0, 32)]), format: 'der', type: 'pkcs8' });
  return sign(null, message, key).toString('hex');
}

/**
 * POSTs a webhook call as QQ does: `X-Signature-Ed25519` over `X-Signature-Timestamp` + the body with
 * the app's secret (`signWith` signs with another one, for a forged call), `X-Bot-Appid`.
 */
export async function sendQqWebhook(url: string, app: QqApp, payload: object | string, o: { signWith?: string; timestamp?: string } = {}): Promise<{ status: number; body: any }> {
  const body = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  const timestamp = o.timestamp ?? String(Math.floor(Date.now() / 1000));
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'QQBot-Callback',
      'x-bot-appid': app.appid,
      'x-signature-method': 'Ed25519',
      'x-signature-timestamp': timestamp,
      'x-signature-ed25519': qqSign(o.signWith ?? app.secret, Buffer.concat([Buffer.from(timestamp), body])),
    },
    body,
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // Kept as text.
  }
  return { status: res.status, body: json };
}

interface Session {
  id: string;
  appid: string;
  seq: number;
  events: { s: number; frame: string }[];
  socket: WebSocket | undefined;
}

/**
 * A fake QQ Official Bot API: `POST /app/getAppAccessToken` (appId and clientSecret checked, a token
 * valid 7,200 s), the OpenAPI (`Authorization: QQBot <token>` checked; `GET /gateway`; passive replies
 * to groups, users, channels and DMs, a repeated `msg_id` + `msg_seq` answered with QQ's
 * deduplication error 40054005) and the WebSocket gateway at `/websocket`: HELLO, IDENTIFY with the
 * access token and intents (a wrong token → close 4004), READY, heartbeat ACKs, RESUME replaying what
 * the session missed then RESUMED (unknown session → op 9), dispatches on demand.
 */
export async function startFakeQq(opts: { apps: QqApp[] }): Promise<FakeQq> {
  const apps = new Map(opts.apps.map((a) => [a.appid, a]));
  const tokens = new Map<string, string>();
  const calls: QqCall[] = [];
  const waiters = new Waiters(() => calls, 'QQ API calls');
  const gateway: FakeQq['gateway'] = { byApp: new Map(), rejected: 0 };
  const gatewayWaiters = new Waiters(() => [gateway], 'QQ gateway states');
  const tokenFetches = new Map<string, number>();
  const sessions = new Map<string, Session>();
  const counted = new Map<WebSocket, string>();
  const shown: QqShownMessage[] = [];
  const seqsSeen = new Set<string>();
  const stats = (appid: string) => {
    let s = gateway.byApp.get(appid);
    if (!s) gateway.byApp.set(appid, (s = { open: 0, maxOpen: 0, identifies: 0, resumes: 0 }));
    return s;
  };

  const server = createServer((req, res) => void handle(req, res).catch(() => { res.statusCode = 500; res.end(); }));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readJsonObject(req);
    const token = /^QQBot (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const reply = (status: number, json: object) => {
      calls.push({ method: req.method ?? '', path: url.pathname, body, token, status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      waiters.notify();
    };
    if (req.method === 'POST' && url.pathname === '/app/getAppAccessToken') {
      const app = apps.get(String(body.appId));
      if (!app || app.secret !== body.clientSecret) return reply(200, { code: 100016, message: 'invalid appid or secret' });
      let t = tokens.get(app.appid);
      if (!t) tokens.set(app.appid, (t = `qq-access-${randomUUID()}`));
      tokenFetches.set(app.appid, (tokenFetches.get(app.appid) ?? 0) + 1);
      return reply(200, { access_token: t, expires_in: '7200' });
    }
    const appid = [...tokens].find(([, t]) => t === token)?.[0];
    if (!appid || req.headers['x-union-appid'] !== appid) return reply(401, { code: 11244, message: 'token not exist or expire' });
    if (req.method === 'GET' && url.pathname === '/gateway') {
      const { port } = new URL(base);
      return reply(200, { url: `ws://127.0.0.1:${port}/websocket` });
    }
    const m = /^\/(?:v2\/(groups|users)|(channels|dms))\/([^/]+)\/messages$/.exec(url.pathname);
    if (req.method === 'POST' && m) {
      const kind = m[1] === 'groups' ? 'group' : m[1] === 'users' ? 'c2c' : m[2] === 'channels' ? 'channel' : 'dm';
      if (typeof body.content !== 'string' || !body.content) return reply(400, { code: 40034006, message: 'content empty' });
      if (body.content.length > 2_000) return reply(400, { code: 40034001, message: 'content too long' });
      if ((kind === 'group' || kind === 'c2c') && body.msg_id) {
        const key = `${body.msg_id}:${body.msg_seq ?? 1}`;
        if (seqsSeen.has(key)) return reply(400, { code: 40054005, message: '消息被去重，请检查请求msgseq' });
        seqsSeen.add(key);
      }
      shown.push({ kind, targetId: decodeURIComponent(m[3]), content: body.content, msgId: body.msg_id, msgSeq: body.msg_seq });
      return reply(200, { id: `sent-${shown.length}`, timestamp: new Date().toISOString() });
    }
    return reply(404, { code: 404, message: 'not found' });
  };

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/websocket')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws));
  });
  const send = (ws: WebSocket, payload: object) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(payload)); };
  const dispatch = (s: Session, t: string, d: object) => {
    const seq = ++s.seq;
    const frame = JSON.stringify({ op: 0, s: seq, t, d, id: `${t}:${randomUUID()}` });
    s.events.push({ s: seq, frame });
    if (s.events.length > MAX_EVENTS_KEPT) s.events.shift();
    if (s.socket?.readyState === WebSocket.OPEN) s.socket.send(frame);
  };
  const attach = (s: Session, ws: WebSocket) => {
    s.socket = ws;
    const st = stats(s.appid);
    st.open++;
    st.maxOpen = Math.max(st.maxOpen, st.open);
    counted.set(ws, s.appid);
  };
  const onSocket = (ws: WebSocket) => {
    let session: Session | undefined;
    send(ws, { op: 10, d: { heartbeat_interval: 5_000 } });
    ws.on('message', (data) => {
      let p: { op: number; d: any };
      try {
        p = JSON.parse(data.toString());
      } catch {
        return ws.close(4001, 'invalid payload');
      }
      const appOf = (t: unknown) => [...tokens].find(([, v]) => `QQBot ${v}` === t)?.[0];
      if (p.op === 1) return send(ws, { op: 11 });
      if (p.op === 2) {
        const appid = appOf(p.d?.token);
        if (!appid) {
          gateway.rejected++;
          gatewayWaiters.notify();
          return ws.close(4004, 'invalid token');
        }
        if ((Number(p.d?.intents) & (1 << 25)) === 0) return ws.close(4013, 'invalid intent');
        session = { id: randomUUID(), appid, seq: 0, events: [], socket: undefined };
        sessions.set(session.id, session);
        attach(session, ws);
        stats(appid).identifies++;
        gatewayWaiters.notify();
        return dispatch(session, 'READY', { version: 1, session_id: session.id, user: { id: `bot-${appid}`, username: 'conveyor-bot', bot: true }, shard: [0, 1] });
      }
      if (p.op === 6) {
        const known = sessions.get(String(p.d?.session_id));
        if (!known || known.appid !== appOf(p.d?.token) || (known.socket && known.socket.readyState === WebSocket.OPEN)) return send(ws, { op: 9, d: false });
        session = known;
        attach(session, ws);
        const st = stats(session.appid);
        st.resumes++;
        st.lastResumed = session.id;
        gatewayWaiters.notify();
        for (const e of session.events) if (e.s > Number(p.d?.seq ?? 0)) ws.send(e.frame);
        return dispatch(session, 'RESUMED', {});
      }
    });
    ws.on('close', () => {
      if (session && session.socket === ws) session.socket = undefined;
      const appid = counted.get(ws);
      if (appid !== undefined) {
        counted.delete(ws);
        stats(appid).open--;
      }
      gatewayWaiters.notify();
    });
  };

  const base = await listen(server);
  const latest = (appid: string) => [...sessions.values()].filter((s) => s.appid === appid).at(-1);
  return {
    apiBase: base,
    authUrl: `${base}/app/getAppAccessToken`,
    calls,
    tokenFetches,
    gateway,
    emitEvent(appid, t, d) {
      const s = latest(appid);
      if (s) dispatch(s, t, d);
    },
    latestSession: (appid) => latest(appid)?.id,
    dropConnections(appid) {
      for (const s of sessions.values()) if (s.appid === appid) s.socket?.terminate();
    },
    shown: () => shown,
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForGateway: (predicate, timeoutMs = 60_000) => gatewayWaiters.waitFor(([g]) => predicate(g), timeoutMs).then(() => undefined),
    close: () => closeWebSocketServer(wss, server),
  };
}
