import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** A message the fake DingTalk showed in a chat: through a session webhook, the robot OpenAPI or an AI card. */
export interface DingtalkShown {
  via: 'session' | 'batchSend' | 'groupSend' | 'card';
  /** The person's staff id (batchSend), the group's openConversationId (groupSend), the session's conversation (session webhook), the card's openSpaceId. */
  to: string;
  msgtype: 'text' | 'markdown' | 'card';
  text: string;
  atUserIds: string[];
  /** A card's updates, oldest first, and whether the last one finalized it. */
  updates?: string[];
  finalized?: boolean;
}

/** A robot message as DingTalk sends it (HTTP callback body, Stream CALLBACK data). */
export interface DingtalkRobotMessageInput {
  msgId?: string;
  conversationType: '1' | '2';
  conversationId?: string;
  conversationTitle?: string;
  senderStaffId: string;
  senderNick?: string;
  text: string;
  /** The bot was mentioned (group). */
  atBot?: boolean;
  /** A picture message (its download code) instead of text; with `text` too, rich text: the text, then the picture. */
  pictureCode?: string;
  /** When the message's session webhook stops working; default an hour from now. */
  webhookExpiresAt?: number;
}

export interface FakeDingtalk {
  /** The OpenAPI base, a bot's `api_base_url`. */
  apiBaseUrl: string;
  chatbotUserId: string;
  shown: DingtalkShown[];
  /** Access tokens handed out. */
  tokensIssued(): number;
  /** Download codes exchanged through `/v1.0/robot/messageFiles/download`, with the robot code named. */
  downloads: { downloadCode: string; robotCode: string }[];
  /** Stream connections per client id: open now, at most at once, ever opened, and the subscriptions each asked for. */
  stream: Map<string, { open: number; maxOpen: number; opened: number; subscriptions: unknown[] }>;
  /** Acknowledgements received, by the frame's messageId, with their frames as sent. */
  acks: Map<string, Record<string, unknown>>;
  /** Answers to SYSTEM pings, by messageId. */
  pongs: Map<string, Record<string, unknown>>;
  /** A robot message body with a session webhook of this fake (conversation, sender, msgId as given). */
  robotMessage(m: DingtalkRobotMessageInput): Record<string, unknown>;
  /** Sends a CALLBACK frame with the message to every open Stream connection of the client id; returns the frame's messageId. */
  sendCallback(clientId: string, message: Record<string, unknown>): string;
  /** Sends a SYSTEM ping; returns its messageId. */
  ping(clientId: string): string;
  /** Sends SYSTEM disconnect, then closes the sockets a moment later as DingTalk does. */
  disconnect(clientId: string): void;
  waitFor(predicate: (shown: DingtalkShown[]) => boolean, timeoutMs?: number): Promise<DingtalkShown[]>;
  waitForStream(predicate: (f: FakeDingtalk) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const ROBOT_TOPIC = '/v1.0/im/bot/messages/get';
/** A 1×1 PNG, what a downloaded picture is here. */
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/**
 * A fake DingTalk speaking its documented wire format. OpenAPI: `POST /v1.0/oauth2/accessToken`
 * ({appKey, appSecret} → {accessToken, expireIn}), `POST /v1.0/robot/oToMessages/batchSend`,
 * `POST /v1.0/robot/groupMessages/send`, `POST /v1.0/card/instances/createAndDeliver` and
 * `PUT /v1.0/card/streaming`, `POST /v1.0/robot/messageFiles/download` (→ a download URL of this fake), each with `x-acs-dingtalk-access-token` (401 InvalidAuthentication
 * otherwise); session webhooks at `POST /robot/sendBySession?session=…` ({errcode, errmsg}, errcode
 * 300001 once expired). Stream mode: `POST /v1.0/gateway/connections/open` ({clientId, clientSecret,
 * subscriptions, ua} → {endpoint, ticket}), a WebSocket at the endpoint taking a one-time ticket, and
 * frames `{specVersion, type, headers, data}` sent on demand, acknowledgements recorded.
 */
export async function startFakeDingtalk(opts: { apps: { clientId: string; clientSecret: string }[] }): Promise<FakeDingtalk> {
  const secrets = new Map(opts.apps.map((a) => [a.clientId, a.clientSecret]));
  const chatbotUserId = `$:LWCP_v1:$${randomBytes(8).toString('base64url')}`;
  const shown: DingtalkShown[] = [];
  const waiters = new Waiters(() => shown, 'DingTalk messages');
  const streamWaiters = new Set<() => void>();
  const tokens = new Set<string>();
  const tickets = new Map<string, string>();
  const sessions = new Map<string, { conversation: string; expiresAt: number }>();
  const cards = new Map<string, DingtalkShown>();
  const sockets = new Map<string, Set<WebSocket>>();
  let issued = 0;
  let base = '';

  const fake: FakeDingtalk = {
    apiBaseUrl: '',
    chatbotUserId,
    shown,
    tokensIssued: () => issued,
    downloads: [],
    stream: new Map(),
    acks: new Map(),
    pongs: new Map(),
    robotMessage: (m) => {
      const session = randomBytes(12).toString('hex');
      const conversationId = m.conversationId ?? `cid${randomBytes(8).toString('base64url')}==`;
      const expiresAt = m.webhookExpiresAt ?? Date.now() + 3_600_000;
      sessions.set(session, { conversation: m.conversationType === '2' ? conversationId : m.senderStaffId, expiresAt });
      return {
        conversationId,
        ...(m.conversationTitle !== undefined ? { conversationTitle: m.conversationTitle } : {}),
        atUsers: m.atBot ? [{ dingtalkId: chatbotUserId }] : [],
        chatbotCorpId: 'dingcorp',
        chatbotUserId,
        msgId: m.msgId ?? `msg${randomBytes(12).toString('base64url')}==`,
        senderNick: m.senderNick ?? m.senderStaffId,
        isAdmin: false,
        senderStaffId: m.senderStaffId,
        sessionWebhookExpiredTime: expiresAt,
        createAt: Date.now(),
        senderCorpId: 'dingcorp',
        conversationType: m.conversationType,
        senderId: `$:LWCP_v1:$${m.senderStaffId}`,
        isInAtList: m.atBot === true,
        sessionWebhook: `${base}/robot/sendBySession?session=${session}`,
        robotCode: 'dingrobot',
        ...(m.pictureCode === undefined
          ? { msgtype: 'text', text: { content: m.atBot ? ` ${m.text}` : m.text } }
          : m.text
            ? { msgtype: 'richText', content: { richText: [{ text: m.text }, { type: 'picture', downloadCode: m.pictureCode, pictureDownloadCode: m.pictureCode }] } }
            : { msgtype: 'picture', content: { downloadCode: m.pictureCode, pictureDownloadCode: m.pictureCode } }),
      };
    },
    sendCallback: (clientId, message) => {
      const messageId = randomUUID();
      frameTo(clientId, { specVersion: '1.0', type: 'CALLBACK', headers: { appId: clientId, connectionId: 'c', contentType: 'application/json', messageId, time: String(Date.now()), topic: ROBOT_TOPIC }, data: JSON.stringify(message) });
      return messageId;
    },
    ping: (clientId) => {
      const messageId = randomUUID();
      frameTo(clientId, { specVersion: '1.0', type: 'SYSTEM', headers: { contentType: 'application/json', messageId, time: String(Date.now()), topic: 'ping' }, data: JSON.stringify({ opaque: messageId }) });
      return messageId;
    },
    disconnect: (clientId) => {
      frameTo(clientId, { specVersion: '1.0', type: 'SYSTEM', headers: { contentType: 'application/json', messageId: randomUUID(), time: String(Date.now()), topic: 'disconnect' }, data: JSON.stringify({ reason: 'server restart' }) });
      setTimeout(() => { for (const ws of sockets.get(clientId) ?? []) ws.close(1000, 'disconnect'); }, 200).unref();
    },
    waitFor: (p, t) => waiters.waitFor(p, t),
    waitForStream: (p, t = 30_000) => new Promise((resolve, reject) => {
      const check = () => {
        if (!p(fake)) return;
        streamWaiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        streamWaiters.delete(check);
        reject(new Error(`waitForStream timed out after ${t} ms: ${JSON.stringify([...fake.stream.entries()])}, ${fake.acks.size} acks`));
      }, t);
      streamWaiters.add(check);
      check();
    }),
    close: async () => {
      for (const set of sockets.values()) for (const ws of set) ws.terminate();
      await closeServer(server);
    },
  };
  const notifyStream = () => { for (const w of [...streamWaiters]) w(); };
  const frameTo = (clientId: string, frame: object) => {
    for (const ws of sockets.get(clientId) ?? []) if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };

  const server = createServer((req, res) => void handle(req, res).catch(() => { res.statusCode = 500; res.end(); }));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const raw = (await readBody(req, 1024 * 1024)).toString('utf8');
    const reply = (status: number, json: object) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      waiters.notify();
    };
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      return reply(400, { code: 'InvalidParameter', message: 'body is not JSON', requestid: randomUUID() });
    }
    const refuse = (status: number, code: string, message: string) => reply(status, { code, message, requestid: randomUUID() });
    if (req.method === 'POST' && url.pathname === '/v1.0/oauth2/accessToken') {
      if (!body.appKey || secrets.get(body.appKey) !== body.appSecret) return refuse(400, 'invalidClientIdOrSecret', 'invalid appKey or appSecret');
      const token = randomBytes(16).toString('hex');
      tokens.add(token);
      issued++;
      return reply(200, { accessToken: token, expireIn: 7200 });
    }
    if (req.method === 'POST' && url.pathname === '/v1.0/gateway/connections/open') {
      if (!body.clientId || secrets.get(body.clientId) !== body.clientSecret) return refuse(401, 'Forbidden.AccessDenied', 'invalid clientId or clientSecret');
      const ticket = randomUUID();
      tickets.set(ticket, body.clientId);
      const s = fake.stream.get(body.clientId) ?? { open: 0, maxOpen: 0, opened: 0, subscriptions: [] };
      s.subscriptions = body.subscriptions ?? [];
      fake.stream.set(body.clientId, s);
      return reply(200, { endpoint: `${base.replace(/^http/, 'ws')}/connect`, ticket });
    }
    if (req.method === 'POST' && url.pathname === '/robot/sendBySession') {
      const session = sessions.get(url.searchParams.get('session') ?? '');
      if (!session) return reply(200, { errcode: 300001, errmsg: 'session not found' });
      if (session.expiresAt < Date.now()) return reply(200, { errcode: 300001, errmsg: 'session expired' });
      const atUserIds: string[] = body.at?.atUserIds ?? [];
      if (body.msgtype === 'text' && typeof body.text?.content === 'string') shown.push({ via: 'session', to: session.conversation, msgtype: 'text', text: body.text.content, atUserIds });
      else if (body.msgtype === 'markdown' && typeof body.markdown?.text === 'string' && typeof body.markdown?.title === 'string') shown.push({ via: 'session', to: session.conversation, msgtype: 'markdown', text: body.markdown.text, atUserIds });
      else return reply(200, { errcode: 40035, errmsg: 'invalid msgtype or content' });
      return reply(200, { errcode: 0, errmsg: 'ok' });
    }
    if (req.method === 'GET' && url.pathname.startsWith('/files/')) {
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_1PX);
      return;
    }
    if (!tokens.has(String(req.headers['x-acs-dingtalk-access-token'] ?? ''))) return refuse(401, 'InvalidAuthentication', 'access token is invalid');
    const robotMessage = () => {
      const param = JSON.parse(String(body.msgParam ?? '{}'));
      if (body.msgKey === 'sampleText') return { msgtype: 'text' as const, text: String(param.content ?? '') };
      if (body.msgKey === 'sampleMarkdown') return { msgtype: 'markdown' as const, text: String(param.text ?? '') };
      return undefined;
    };
    if (req.method === 'POST' && url.pathname === '/v1.0/robot/oToMessages/batchSend') {
      const m = robotMessage();
      if (!m || !Array.isArray(body.userIds) || body.userIds.length === 0 || !body.robotCode) return refuse(400, 'InvalidParameter', 'robotCode, userIds, msgKey and msgParam are required');
      for (const to of body.userIds) shown.push({ via: 'batchSend', to: String(to), ...m, atUserIds: [] });
      return reply(200, { processQueryKey: randomUUID(), invalidStaffIdList: [], flowControlledStaffIdList: [] });
    }
    if (req.method === 'POST' && url.pathname === '/v1.0/robot/groupMessages/send') {
      const m = robotMessage();
      if (!m || !body.openConversationId || !body.robotCode) return refuse(400, 'InvalidParameter', 'robotCode, openConversationId, msgKey and msgParam are required');
      shown.push({ via: 'groupSend', to: String(body.openConversationId), ...m, atUserIds: [] });
      return reply(200, { processQueryKey: randomUUID() });
    }
    if (req.method === 'POST' && url.pathname === '/v1.0/robot/messageFiles/download') {
      if (!body.downloadCode || !body.robotCode) return refuse(400, 'InvalidParameter', 'downloadCode and robotCode are required');
      fake.downloads.push({ downloadCode: String(body.downloadCode), robotCode: String(body.robotCode) });
      return reply(200, { downloadUrl: `${base}/files/${encodeURIComponent(String(body.downloadCode))}.png` });
    }
    if (req.method === 'POST' && url.pathname === '/v1.0/card/instances/createAndDeliver') {
      if (!body.cardTemplateId || !body.outTrackId || !body.openSpaceId) return refuse(400, 'InvalidParameter', 'cardTemplateId, outTrackId and openSpaceId are required');
      if (cards.has(body.outTrackId)) return refuse(400, 'param.duplicateOutTrackId', 'outTrackId already used');
      const card: DingtalkShown = { via: 'card', to: String(body.openSpaceId), msgtype: 'card', text: String(body.cardData?.cardParamMap?.content ?? ''), atUserIds: [], updates: [], finalized: false };
      cards.set(body.outTrackId, card);
      shown.push(card);
      return reply(200, { success: true, result: { outTrackId: body.outTrackId } });
    }
    if (req.method === 'PUT' && url.pathname === '/v1.0/card/streaming') {
      const card = cards.get(body.outTrackId);
      if (!card) return refuse(400, 'param.cardNotExist', 'no card with this outTrackId');
      if (card.finalized) return refuse(400, 'param.cardFinalized', 'the card is finalized');
      card.text = body.isFull ? String(body.content) : card.text + String(body.content);
      card.updates!.push(card.text);
      card.finalized = body.isFinalize === true;
      return reply(200, { success: true });
    }
    return refuse(404, 'NotFound', `no route ${req.method} ${url.pathname}`);
  };

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const clientId = tickets.get(url.searchParams.get('ticket') ?? '');
    if (url.pathname !== '/connect' || !clientId) {
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    // A ticket opens one connection.
    tickets.delete(url.searchParams.get('ticket') ?? '');
    wss.handleUpgrade(req, socket, head, (ws) => {
      const s = fake.stream.get(clientId)!;
      const set = sockets.get(clientId) ?? new Set();
      sockets.set(clientId, set);
      set.add(ws);
      s.open++;
      s.opened++;
      s.maxOpen = Math.max(s.maxOpen, s.open);
      notifyStream();
      ws.on('message', (data) => {
        let f: any;
        try {
          f = JSON.parse(data.toString());
        } catch {
          return;
        }
        const id = String(f?.headers?.messageId ?? '');
        if (f?.headers?.topic === 'ping') fake.pongs.set(id, f);
        else if (id) fake.acks.set(id, f);
        notifyStream();
      });
      ws.on('close', () => {
        set.delete(ws);
        s.open--;
        notifyStream();
      });
    });
  });

  base = await listen(server);
  fake.apiBaseUrl = base;
  return fake;
}

/** An HTTP callback as DingTalk sends one to a robot in HTTP mode: the JSON body with `timestamp` and `sign` headers. */
export function sendDingtalkCallback(url: string, appSecret: string, body: string | object, opts: { timestamp?: number; sign?: string } = {}): Promise<Response> {
  const timestamp = String(opts.timestamp ?? Date.now());
  const sign = opts.sign ?? createHmac('sha256', appSecret).update(`${timestamp}\n${appSecret}`).digest('base64');
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', timestamp, sign }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}
