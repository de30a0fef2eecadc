import { createServer, type IncomingMessage } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, closeServer, listen } from './http-util.js';

/** An action a client called (`send_msg`, `get_msg`, ...), as received. */
export interface OneBotAction {
  action: string;
  params: Record<string, any>;
  echo: string | undefined;
  /** Which connection (1-based, in the order they were opened) it came over. */
  connection: number;
  at: number;
}

export interface OneBotMessageInput {
  messageType: 'private' | 'group';
  userId: number;
  groupId?: number;
  /** Segments (`[{type, data}]`) or a CQ-code string. */
  message: unknown;
  nickname?: string;
  card?: string;
  /** Default: the next message id. */
  messageId?: number;
}

export interface FakeOneBot {
  /** The forward WebSocket URL (`ws://127.0.0.1:<port>/`). */
  url: string;
  host: string;
  port: number;
  selfId: number;
  actions: OneBotAction[];
  /** Connections ever accepted, open now, and the most open at one time. */
  connections: { opened: number; open: number; maxOpen: number; refused: number };
  /** Sends a message event to every open connection (as NapCat does with several forward clients), or keeps it until one connects. */
  emitMessage(m: OneBotMessageInput): number;
  /** Sends a raw text frame to every open connection (malformed input). */
  sendRaw(frame: string): void;
  /**
   * Reverse WebSocket: the fake connects to `url` (the gateway listening for the bot), with its access
   * token and `X-Self-ID`, and keeps reconnecting every 200 ms while it is not connected (refused, no
   * listener, dropped), as implementations do. `refusals` counts the attempts that failed.
   */
  connectReverse(url: string): { refusals: () => number; stop: () => void };
  /** Send actions (send_msg and its private/group forms) as the user would see them, per chat. */
  sent(): OneBotAction[];
  waitFor(predicate: (actions: OneBotAction[]) => boolean, timeoutMs?: number): Promise<OneBotAction[]>;
  waitForConnections(predicate: (c: FakeOneBot['connections']) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const SEND_ACTIONS = new Set(['send_msg', 'send_private_msg', 'send_group_msg']);
const MAX_BUFFERED = 10_000;

/**
 * A fake OneBot v11 implementation (NapCat, Lagrange, go-cqhttp) serving the forward WebSocket (or,
 * with `connectReverse`, connecting to a reverse WebSocket):
 * checks `Authorization: Bearer <access_token>` (401 otherwise), sends a `meta_event` lifecycle
 * `connect` and heartbeats, pushes message events in OneBot's JSON shape, and answers actions with
 * `{status, retcode, data, echo}`: send_msg / send_private_msg / send_group_msg (recorded, with a new
 * message_id), get_msg (messages it emitted or was sent), get_group_info, get_login_info; anything else `failed` 1404.
 *
 * Events emitted while no client is connected wait for the next one. A socket that drops without a
 * close handshake (its peer was killed) may have taken the last events with it unread: those sent on
 * it within `replayWindowMs` before it dropped are sent again to the next client, so a consumer
 * must recognise a message it already saw by its id (as it must when two clients both receive one).
 */
export async function startFakeOneBot(opts: { accessToken?: string; selfId?: number; replayWindowMs?: number; heartbeatMs?: number; port?: number; firstMessageId?: number } = {}): Promise<FakeOneBot> {
  const selfId = opts.selfId ?? 10001;
  const replayWindowMs = opts.replayWindowMs ?? 3_000;
  const actions: OneBotAction[] = [];
  const waiters = new Waiters(() => actions, 'OneBot actions');
  const connState = { opened: 0, open: 0, maxOpen: 0, refused: 0 };
  const connWaiters = new Set<() => void>();
  const notifyConns = () => { for (const w of [...connWaiters]) w(); };
  const messages = new Map<number, { user_id: number; message: unknown }>();
  const buffered: string[] = [];
  const clients = new Map<WebSocket, { n: number; recent: { at: number; frame: string }[] }>();
  let nextMessageId = opts.firstMessageId ?? 5000;
  let closing = false;
  const reverseStops: (() => void)[] = [];

  const server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' });
    res.end('WebSocket only');
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const auth = req.headers.authorization ?? '';
    if (opts.accessToken && auth !== `Bearer ${opts.accessToken}`) {
      connState.refused++;
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      notifyConns();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws));
  });

  const write = (ws: WebSocket, frame: string) => {
    const c = clients.get(ws);
    if (!c) return;
    ws.send(frame);
    const now = Date.now();
    c.recent.push({ at: now, frame });
    while (c.recent.length && c.recent[0].at < now - replayWindowMs) c.recent.shift();
  };

  const broadcast = (frame: string) => {
    if (clients.size === 0) {
      if (buffered.length < MAX_BUFFERED) buffered.push(frame);
      return;
    }
    for (const ws of clients.keys()) write(ws, frame);
  };

  const accept = (ws: WebSocket) => {
    connState.opened++;
    connState.open++;
    connState.maxOpen = Math.max(connState.maxOpen, connState.open);
    const n = connState.opened;
    clients.set(ws, { n, recent: [] });
    notifyConns();
    ws.send(JSON.stringify({ time: Math.floor(Date.now() / 1000), self_id: selfId, post_type: 'meta_event', meta_event_type: 'lifecycle', sub_type: 'connect' }));
    for (const frame of buffered.splice(0)) write(ws, frame);
    const heartbeat = setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ time: Math.floor(Date.now() / 1000), self_id: selfId, post_type: 'meta_event', meta_event_type: 'heartbeat', status: { online: true, good: true }, interval: opts.heartbeatMs ?? 5_000 }));
    }, opts.heartbeatMs ?? 5_000);
    ws.on('message', (data) => {
      let req: { action?: unknown; params?: unknown; echo?: unknown };
      try {
        req = JSON.parse(data.toString());
      } catch {
        return;
      }
      const action = String(req.action ?? '');
      const params = (typeof req.params === 'object' && req.params !== null ? req.params : {}) as Record<string, any>;
      const echo = typeof req.echo === 'string' ? req.echo : undefined;
      actions.push({ action, params, echo, connection: n, at: Date.now() });
      const respond = (status: 'ok' | 'failed', retcode: number, data: unknown) => ws.send(JSON.stringify({ status, retcode, data, echo }));
      if (SEND_ACTIONS.has(action)) {
        const id = nextMessageId++;
        messages.set(id, { user_id: selfId, message: params.message });
        respond('ok', 0, { message_id: id });
      } else if (action === 'get_msg') {
        const m = messages.get(Number(params.message_id));
        if (m) respond('ok', 0, { message_id: Number(params.message_id), sender: { user_id: m.user_id }, message: m.message });
        else respond('failed', 1404, null);
      } else if (action === 'get_group_info') {
        respond('ok', 0, { group_id: Number(params.group_id), group_name: `Group name ${params.group_id}`, member_count: 3 });
      } else if (action === 'get_login_info') {
        respond('ok', 0, { user_id: selfId, nickname: 'fake bot' });
      } else {
        respond('failed', 1404, null);
      }
      waiters.notify();
    });
    ws.on('close', (code) => {
      clearInterval(heartbeat);
      const c = clients.get(ws);
      clients.delete(ws);
      connState.open--;
      // No close handshake: the peer may have died with unread events in its socket.
      if (c && code === 1006) {
        const cutoff = Date.now() - replayWindowMs;
        const replay = c.recent.filter((r) => r.at >= cutoff).map((r) => r.frame);
        if (clients.size > 0) for (const ws2 of clients.keys()) for (const f of replay) write(ws2, f);
        else buffered.push(...replay.slice(0, MAX_BUFFERED - buffered.length));
      }
      notifyConns();
    });
    ws.on('error', () => undefined);
  };

  const url = await listen(server, opts.port ?? 0);
  const port = Number(new URL(url).port);
  return {
    url: `ws://127.0.0.1:${port}/`,
    host: '127.0.0.1',
    port,
    selfId,
    actions,
    connections: connState,
    emitMessage(m) {
      const messageId = m.messageId ?? nextMessageId++;
      messages.set(messageId, { user_id: m.userId, message: m.message });
      const event = {
        time: Math.floor(Date.now() / 1000),
        self_id: selfId,
        post_type: 'message',
        message_type: m.messageType,
        sub_type: m.messageType === 'group' ? 'normal' : 'friend',
        message_id: messageId,
        user_id: m.userId,
        ...(m.messageType === 'group' ? { group_id: m.groupId } : {}),
        message: m.message,
        raw_message: typeof m.message === 'string' ? m.message : '',
        font: 0,
        sender: { user_id: m.userId, nickname: m.nickname ?? `user${m.userId}`, ...(m.card !== undefined ? { card: m.card } : {}) },
      };
      broadcast(JSON.stringify(event));
      return messageId;
    },
    sendRaw(frame) {
      broadcast(frame);
    },
    connectReverse(target) {
      let refusals = 0;
      let stopped = false;
      let live: WebSocket | undefined;
      const attempt = () => {
        if (stopped || closing) return;
        const ws = new WebSocket(target, { headers: { ...(opts.accessToken ? { authorization: `Bearer ${opts.accessToken}` } : {}), 'x-self-id': String(selfId), 'x-client-role': 'Universal' } });
        let opened = false;
        ws.on('open', () => {
          opened = true;
          live = ws;
          accept(ws);
        });
        ws.on('error', () => undefined);
        ws.on('close', () => {
          if (live === ws) live = undefined;
          if (!opened) refusals++;
          if (!stopped && !closing) setTimeout(attempt, 200).unref();
        });
      };
      reverseStops.push(() => {
        stopped = true;
        live?.terminate();
      });
      attempt();
      return { refusals: () => refusals, stop: () => { stopped = true; live?.close(); } };
    },
    sent: () => actions.filter((a) => SEND_ACTIONS.has(a.action)),
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForConnections(predicate, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(connState)) return;
          connWaiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          connWaiters.delete(check);
          reject(new Error(`timed out waiting for OneBot connections; now ${JSON.stringify(connState)}`));
        }, timeoutMs);
        connWaiters.add(check);
        check();
      });
    },
    async close() {
      closing = true;
      for (const stop of reverseStops) stop();
      for (const ws of clients.keys()) ws.terminate();
      wss.close();
      await closeServer(server);
    },
  };
}
