import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, listen, readBody, closeWebSocketServer } from './http-util.js';

/** A REST call the fake answered, as received. */
export interface DiscordCall {
  method: string;
  /** The path below the API base (`/channels/1/messages`). */
  path: string;
  body: Record<string, any>;
  /** The token of `Authorization: Bot <token>`. */
  token: string;
  status: number;
  at: number;
}

/** A message as the channel shows it now (created, then possibly edited). */
export interface DiscordShownMessage {
  id: string;
  channelId: string;
  content: string;
  replyTo: string | undefined;
  edits: number;
}

export interface DiscordMessageInput {
  /** Absent: a DM with the author (its DM channel). */
  guildId?: string;
  /** Default: the DM channel of the author (DMs); required for guild messages. */
  channelId?: string;
  authorId: string;
  username?: string;
  content: string;
  /** Users mentioned (`<@id>` in the content). */
  mentions?: { id: string; username: string }[];
  attachments?: { filename: string; url: string; content_type?: string }[];
  bot?: boolean;
}

export interface FakeDiscord {
  /** The REST base (`http://127.0.0.1:<port>/api/v10`), a bot's `api_base_url`. */
  apiBase: string;
  botUserId: string;
  calls: DiscordCall[];
  /** Gateway sockets ever opened, open now, and per token the identified sessions open now and at most at once. */
  gateway: { opened: number; open: number; identified: Map<string, { open: number; maxOpen: number; identifies: number; resumes: number; lastResumed?: string }>; rejected: Map<string, number> };
  /**
   * Sends MESSAGE_CREATE to the latest session of `token`; returns the message id. A session whose
   * socket is gone keeps it for a RESUME, as Discord does.
   */
  emitMessage(token: string, m: DiscordMessageInput): string;
  /** The id of `token`'s latest session (the one `emitMessage` sends to). */
  latestSession(token: string): string | undefined;
  /** Cuts the sockets of `token`'s sessions without a close frame (a network drop); the sessions stay resumable. */
  dropConnections(token: string): void;
  /** The DM channel id the fake gives a user. */
  dmChannelOf(userId: string): string;
  /** Messages a channel shows, oldest first. */
  channel(channelId: string): DiscordShownMessage[];
  /** The next `count` message creates answer 429 with `retry_after` seconds. */
  rateLimitNext(count: number, retryAfterSeconds: number): void;
  waitFor(predicate: (calls: DiscordCall[]) => boolean, timeoutMs?: number): Promise<DiscordCall[]>;
  waitForGateway(predicate: (g: FakeDiscord['gateway']) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const INTENTS_NEEDED = (1 << 9) | (1 << 12) | (1 << 15);
const MAX_EVENTS_KEPT = 1_000;

interface Session {
  id: string;
  token: string;
  seq: number;
  events: { s: number; frame: string }[];
  socket: WebSocket | undefined;
}

/**
 * A fake Discord: REST below `/api/v10` (`GET /gateway/bot`, channels (guild ones named `channel-<id>`), DM channels, message create and edit,
 * every call recorded; `Authorization: Bot <token>` required, any token accepted there so the
 * Gateway's own check can be exercised) and the Gateway WebSocket at `/gateway` (v10, JSON): HELLO,
 * IDENTIFY checked (unknown token → close 4004, missing intents → 4014), READY with a session, heartbeat
 * ACKs, RESUME replaying what the session missed (unknown session → op 9), and MESSAGE_CREATE on demand.
 */
export async function startFakeDiscord(opts: { tokens: string[]; botUserId?: string; heartbeatMs?: number }): Promise<FakeDiscord> {
  const valid = new Set(opts.tokens);
  const botUserId = opts.botUserId ?? '900000000000000001';
  const calls: DiscordCall[] = [];
  const waiters = new Waiters(() => calls, 'Discord REST calls');
  const gatewayState: FakeDiscord['gateway'] = { opened: 0, open: 0, identified: new Map(), rejected: new Map() };
  const gatewayWaiters = new Set<() => void>();
  const notifyGateway = () => { for (const w of [...gatewayWaiters]) w(); };
  const sessions = new Map<string, Session>();
  /** Sockets counted as an open session of a token, so a late close never counts twice or is lost. */
  const counted = new Map<WebSocket, string>();
  const shown = new Map<string, DiscordShownMessage[]>();
  const dms = new Map<string, string>();
  let nextId = 1_100_000_000_000_000_000n;
  const snowflake = () => String(nextId++);
  let limited = { count: 0, retryAfter: 0 };

  const dmChannelOf = (userId: string) => {
    let id = dms.get(userId);
    if (!id) dms.set(userId, (id = snowflake()));
    return id;
  };
  const stats = (token: string) => {
    let s = gatewayState.identified.get(token);
    if (!s) gatewayState.identified.set(token, (s = { open: 0, maxOpen: 0, identifies: 0, resumes: 0 }));
    return s;
  };

  const server = createServer((req, res) => void handle(req, res).catch(() => { res.statusCode = 500; res.end(); }));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/^\/api\/v10/, '');
    const raw = (await readBody(req)).toString();
    const body = raw ? JSON.parse(raw) : {};
    const auth = /^Bot (.+)$/.exec(req.headers.authorization ?? '');
    const reply = (status: number, json: object) => {
      calls.push({ method: req.method ?? '', path, body, token: auth?.[1] ?? '', status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      waiters.notify();
    };
    if (!auth) return reply(401, { code: 0, message: '401: Unauthorized' });
    if (req.method === 'GET' && path === '/gateway/bot') {
      const { port } = new URL(base);
      return reply(200, { url: `ws://127.0.0.1:${port}/gateway`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (req.method === 'POST' && path === '/users/@me/channels') {
      if (typeof body.recipient_id !== 'string') return reply(400, { code: 50035, message: 'Invalid Form Body: recipient_id' });
      return reply(200, { id: dmChannelOf(body.recipient_id), type: 1 });
    }
    const ch = /^\/channels\/(\d+)$/.exec(path);
    if (req.method === 'GET' && ch) return reply(200, { id: ch[1], type: [...dms.values()].includes(ch[1]) ? 1 : 0, ...([...dms.values()].includes(ch[1]) ? {} : { name: `channel-${ch[1]}` }) });
    let m = /^\/channels\/(\d+)\/messages$/.exec(path);
    if (req.method === 'POST' && m) {
      if (limited.count > 0) {
        limited.count--;
        return reply(429, { message: 'You are being rate limited.', retry_after: limited.retryAfter, global: false });
      }
      if (typeof body.content !== 'string' || body.content.length === 0 || body.content.length > 2000) return reply(400, { code: 50035, message: 'Invalid Form Body: content' });
      const msg: DiscordShownMessage = { id: snowflake(), channelId: m[1], content: body.content, replyTo: body.message_reference?.message_id, edits: 0 };
      const list = shown.get(m[1]) ?? [];
      list.push(msg);
      shown.set(m[1], list);
      return reply(200, { id: msg.id, channel_id: m[1], content: msg.content });
    }
    m = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (req.method === 'PATCH' && m) {
      const msg = shown.get(m[1])?.find((x) => x.id === m![2]);
      if (!msg) return reply(404, { code: 10008, message: 'Unknown Message' });
      if (typeof body.content !== 'string' || body.content.length > 2000) return reply(400, { code: 50035, message: 'Invalid Form Body: content' });
      msg.content = body.content;
      msg.edits++;
      return reply(200, { id: msg.id, channel_id: m[1], content: msg.content });
    }
    return reply(404, { code: 0, message: '404: Not Found' });
  };

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/gateway')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => onSocket(ws));
  });

  const send = (ws: WebSocket, payload: object) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(payload)); };
  const dispatch = (session: Session, t: string, d: object) => {
    const s = ++session.seq;
    const frame = JSON.stringify({ op: 0, t, s, d });
    session.events.push({ s, frame });
    if (session.events.length > MAX_EVENTS_KEPT) session.events.shift();
    if (session.socket?.readyState === WebSocket.OPEN) session.socket.send(frame);
  };

  const onSocket = (ws: WebSocket) => {
    gatewayState.opened++;
    gatewayState.open++;
    notifyGateway();
    let session: Session | undefined;
    send(ws, { op: 10, d: { heartbeat_interval: opts.heartbeatMs ?? 5_000 } });
    ws.on('message', (data) => {
      let p: { op: number; d: any };
      try {
        p = JSON.parse(data.toString());
      } catch {
        return ws.close(4002, 'Error while decoding payload.');
      }
      if (p.op === 1) return send(ws, { op: 11 });
      if (p.op === 2) {
        if (session) return ws.close(4005, 'Already authenticated.');
        if (!valid.has(p.d?.token)) {
          gatewayState.rejected.set(String(p.d?.token), (gatewayState.rejected.get(String(p.d?.token)) ?? 0) + 1);
          notifyGateway();
          return ws.close(4004, 'Authentication failed.');
        }
        if ((Number(p.d?.intents) & INTENTS_NEEDED) !== INTENTS_NEEDED) return ws.close(4014, 'Disallowed intent(s).');
        session = { id: randomUUID(), token: p.d.token, seq: 0, events: [], socket: ws };
        sessions.set(session.id, session);
        const st = stats(session.token);
        st.identifies++;
        st.open++;
        counted.set(ws, session.token);
        st.maxOpen = Math.max(st.maxOpen, st.open);
        notifyGateway();
        const { port } = new URL(base);
        return dispatch(session, 'READY', { v: 10, user: { id: botUserId, username: 'conveyor-bot', bot: true }, session_id: session.id, resume_gateway_url: `ws://127.0.0.1:${port}/gateway`, guilds: [] });
      }
      if (p.op === 6) {
        const known = sessions.get(String(p.d?.session_id));
        if (!known || known.token !== p.d?.token || (known.socket && known.socket.readyState === WebSocket.OPEN)) return send(ws, { op: 9, d: false });
        session = known;
        session.socket = ws;
        const st = stats(session.token);
        st.resumes++;
        st.lastResumed = session.id;
        st.open++;
        counted.set(ws, session.token);
        st.maxOpen = Math.max(st.maxOpen, st.open);
        notifyGateway();
        for (const e of session.events) if (e.s > Number(p.d?.seq ?? 0)) ws.send(e.frame);
        return dispatch(session, 'RESUMED', {});
      }
    });
    ws.on('close', () => {
      gatewayState.open--;
      if (session && session.socket === ws) session.socket = undefined;
      const token = counted.get(ws);
      if (token !== undefined) {
        counted.delete(ws);
        stats(token).open--;
      }
      notifyGateway();
    });
  };

  const base = await listen(server);

  return {
    apiBase: `${base}/api/v10`,
    botUserId,
    calls,
    gateway: gatewayState,
    emitMessage(token, m) {
      const id = snowflake();
      const channelId = m.channelId ?? dmChannelOf(m.authorId);
      const d = {
        id,
        channel_id: channelId,
        ...(m.guildId ? { guild_id: m.guildId, member: { nick: null } } : {}),
        author: { id: m.authorId, username: m.username ?? `user${m.authorId}`, global_name: null, ...(m.bot ? { bot: true } : {}) },
        content: m.content,
        timestamp: new Date().toISOString(),
        mentions: (m.mentions ?? []).map((u) => ({ id: u.id, username: u.username })),
        attachments: (m.attachments ?? []).map((a) => ({ id: snowflake(), filename: a.filename, url: a.url, ...(a.content_type ? { content_type: a.content_type } : {}), size: 1 })),
        type: 0,
      };
      const latest = [...sessions.values()].filter((s) => s.token === token).at(-1);
      if (latest) dispatch(latest, 'MESSAGE_CREATE', d);
      return id;
    },
    latestSession: (token) => [...sessions.values()].filter((s) => s.token === token).at(-1)?.id,
    dropConnections(token) {
      for (const s of sessions.values()) if (s.token === token) s.socket?.terminate();
    },
    dmChannelOf,
    channel: (id) => shown.get(id) ?? [],
    rateLimitNext(count, retryAfterSeconds) {
      limited = { count, retryAfter: retryAfterSeconds };
    },
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForGateway: (predicate, timeoutMs = 60_000) => new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(gatewayState)) return;
        gatewayWaiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        gatewayWaiters.delete(check);
        reject(new Error(`Discord Gateway condition not met in ${timeoutMs} ms: ${JSON.stringify({ ...gatewayState, identified: [...gatewayState.identified], rejected: [...gatewayState.rejected] })}`));
      }, timeoutMs);
      gatewayWaiters.add(check);
      check();
    }),
    close: () => closeWebSocketServer(wss, server),
  };
}
