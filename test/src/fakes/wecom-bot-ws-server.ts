import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, listen, closeWebSocketServer } from './http-util.js';

/** A frame the bot sent that the fake acknowledged (or refused). */
export interface WecomBotWsFrame {
  cmd: string;
  reqId: string;
  body: Record<string, any>;
  /** The BotId of the connection it came on. */
  botId: string;
  errcode: number;
}

export interface WecomBotWsStats {
  open: number;
  maxOpen: number;
  /** Sign-ins accepted, and connections WeCom closed because the same bot signed in elsewhere. */
  subscribed: number;
  displaced: number;
  pings: number;
}

export interface WecomBotWsMessageInput {
  userId: string;
  text: string;
  /** A group chat (the bot mentioned); else a single chat. */
  chatId?: string;
}

export interface FakeWecomBotWs {
  /** The `ws_url` of a bot. */
  url: string;
  frames: WecomBotWsFrame[];
  connections: Map<string, WecomBotWsStats>;
  /** Sign-ins refused (a wrong secret or an unknown bot). */
  refused: number;
  /** Pushes a member's text as `aibot_msg_callback` to the bot's connection; returns the callback's req_id and msgid. */
  pushText(botId: string, m: WecomBotWsMessageInput): { reqId: string; msgId: string };
  /** Pushes a callback body as it is (for bad input), under a new req_id. */
  pushCallback(botId: string, cmd: string, body: unknown): string;
  pushRaw(botId: string, text: string): void;
  /** Refuses the next `n` replies with this errcode (WeCom's answer to a reply it does not take). */
  refuseReplies(n: number, errcode: number, errmsg: string): void;
  /** Replies acknowledged under `reqId` (the callback's). */
  repliesTo(reqId: string): WecomBotWsFrame[];
  waitFor(predicate: (frames: WecomBotWsFrame[]) => boolean, timeoutMs?: number): Promise<WecomBotWsFrame[]>;
  waitForConnections(predicate: (c: FakeWecomBotWs['connections']) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A fake of WeCom's AI bot long connection (`wss://openws.work.weixin.qq.com`), speaking its JSON
 * frames: `aibot_subscribe` checked against the bots' secrets (errcode 0, or 40001 and the socket
 * closed), `ping` acknowledged, callbacks pushed as `aibot_msg_callback`, and replies
 * (`aibot_respond_msg` under a callback's req_id, `aibot_send_msg`) acknowledged by req_id with
 * errcode 0, or refused on request. One connection per bot, as WeCom keeps it: a second sign-in
 * closes the first with a `disconnected_event`. A reply under a req_id the fake never issued to
 * that bot is refused (errcode 846608), so a reply must carry its callback's req_id.
 */
export async function startFakeWecomBotWs(opts: { bots: Record<string, string> }): Promise<FakeWecomBotWs> {
  const frames: WecomBotWsFrame[] = [];
  const waiters = new Waiters(() => frames, 'WeCom AI bot frames');
  const connections = new Map<string, WecomBotWsStats>();
  const connWaiters = new Waiters(() => [connections], 'WeCom AI bot connections');
  const sockets = new Map<string, WebSocket>();
  const issued = new Map<string, string>();
  const state = { refused: 0, refuse: { n: 0, errcode: 0, errmsg: '' } };
  const stats = (botId: string) => {
    let s = connections.get(botId);
    if (!s) connections.set(botId, (s = { open: 0, maxOpen: 0, subscribed: 0, displaced: 0, pings: 0 }));
    return s;
  };
  const hex = (n: number) => randomBytes(n).toString('hex');

  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, maxPayload: 1024 * 1024 });
  wss.on('connection', (ws) => {
    let botId: string | undefined;
    const ack = (reqId: string, errcode = 0, errmsg = 'ok') => ws.send(JSON.stringify({ headers: { req_id: reqId }, errcode, errmsg }));
    ws.on('message', (data) => {
      let f: { cmd?: string; headers?: { req_id?: string }; body?: any };
      try {
        f = JSON.parse(data.toString());
      } catch {
        return ws.close(4000, 'not JSON');
      }
      const reqId = String(f.headers?.req_id ?? '');
      if (f.cmd === 'aibot_subscribe') {
        const id = String(f.body?.bot_id ?? '');
        if (botId !== undefined || opts.bots[id] === undefined || opts.bots[id] !== f.body?.secret) {
          state.refused++;
          connWaiters.notify();
          ack(reqId, 40001, 'invalid bot_id or secret');
          return ws.close(4001, 'invalid credentials');
        }
        const previous = sockets.get(id);
        if (previous && previous.readyState === WebSocket.OPEN) {
          stats(id).displaced++;
          previous.send(JSON.stringify({ cmd: 'aibot_event_callback', headers: { req_id: `event_${hex(8)}` }, body: { msgtype: 'event', aibotid: id, event: { eventtype: 'disconnected_event' } } }));
          previous.close(4002, 'signed in elsewhere');
        }
        botId = id;
        sockets.set(id, ws);
        const st = stats(id);
        st.open++;
        st.subscribed++;
        st.maxOpen = Math.max(st.maxOpen, st.open);
        ack(reqId);
        return connWaiters.notify();
      }
      if (botId === undefined) return ws.close(4003, 'subscribe first');
      if (f.cmd === 'ping') {
        stats(botId).pings++;
        return ack(reqId);
      }
      if (f.cmd === 'aibot_respond_msg' || f.cmd === 'aibot_send_msg') {
        let errcode = 0;
        let errmsg = 'ok';
        if (f.cmd === 'aibot_respond_msg' && issued.get(reqId) !== botId) [errcode, errmsg] = [846608, 'invalid req_id'];
        else if (state.refuse.n > 0) {
          state.refuse.n--;
          [errcode, errmsg] = [state.refuse.errcode, state.refuse.errmsg];
        }
        frames.push({ cmd: f.cmd, reqId, body: f.body ?? {}, botId, errcode });
        ack(reqId, errcode, errmsg);
        return waiters.notify();
      }
      ack(reqId, 40008, `unknown cmd ${f.cmd}`);
    });
    ws.on('close', () => {
      if (botId === undefined) return;
      stats(botId).open--;
      if (sockets.get(botId) === ws) sockets.delete(botId);
      connWaiters.notify();
    });
  });

  const send = (botId: string, frame: string) => {
    const ws = sockets.get(botId);
    if (!ws || ws.readyState !== WebSocket.OPEN) throw new Error(`bot ${botId} is not connected to the fake`);
    ws.send(frame);
  };
  const pushCallback = (botId: string, cmd: string, body: unknown) => {
    const reqId = `${hex(16)}`;
    issued.set(reqId, botId);
    send(botId, JSON.stringify({ cmd, headers: { req_id: reqId }, body }));
    return reqId;
  };
  const url = (await listen(server)).replace(/^http/, 'ws');
  return {
    url,
    frames,
    connections,
    get refused() {
      return state.refused;
    },
    pushText(botId, m) {
      const msgId = hex(16);
      const reqId = pushCallback(botId, 'aibot_msg_callback', {
        msgid: msgId,
        aibotid: botId,
        ...(m.chatId ? { chatid: m.chatId } : {}),
        chattype: m.chatId ? 'group' : 'single',
        from: { userid: m.userId },
        msgtype: 'text',
        text: { content: m.text },
      });
      return { reqId, msgId };
    },
    pushCallback,
    pushRaw: (botId, text) => send(botId, text),
    refuseReplies(n, errcode, errmsg) {
      state.refuse = { n, errcode, errmsg };
    },
    repliesTo: (reqId) => frames.filter((f) => f.cmd === 'aibot_respond_msg' && f.reqId === reqId && f.errcode === 0),
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    waitForConnections: (predicate, timeoutMs = 60_000) => connWaiters.waitFor(([c]) => predicate(c), timeoutMs).then(() => undefined),
    close: () => closeWebSocketServer(wss, server),
  };
}
