import { createServer } from 'node:http';
import { randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import { encryptWecom, wecomSignature } from '@conveyor/wecom';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** A text message the fake WeCom delivered to a member through an app. */
export interface WecomDelivered {
  touser: string;
  agentid: number;
  content: string;
}

/** A fake WeChat-family text API (WeCom `message/send`, WeChat `message/custom/send`) as tests read it. */
export interface FakeTextApi<D> {
  /** The API base (what a bot's `api_base_url` is set to), ending in `/cgi-bin`. */
  apiBaseUrl: string;
  delivered: D[];
  /** How many access tokens were handed out. */
  tokensIssued(): number;
  /** Every token handed out so far is expired from now on (sending answers errcode 42001). */
  expireTokens(): void;
  waitFor(predicate: (delivered: D[]) => boolean, timeoutMs?: number): Promise<D[]>;
  close(): Promise<void>;
}

/** A customer-service message the fake WeCom delivered to a WeChat customer (`kf/send_msg`). */
export interface KfDelivered {
  touser: string;
  openKfId: string;
  content: string;
}

export interface FakeWecom extends FakeTextApi<WecomDelivered> {
  /**
   * A WeChat customer writes to a customer-service account: the message joins the account's list
   * `kf/sync_msg` pages through, and the token of the `kf_msg_or_event` callback announcing it is
   * returned (the test sends that callback).
   */
  kfCustomerSays(m: { openKfId: string; customer: string; content: string; sendTime?: number; msgId?: string; origin?: number }): { token: string; msgId: string };
  /** A WeChat customer sends an image: stored as temporary media (`media/get`), its message joins the list as `kfCustomerSays`. */
  kfCustomerSendsImage(m: { openKfId: string; customer: string; bytes: Buffer; contentType: string }): { token: string; msgId: string; mediaId: string };
  /** `media/get` calls answered with a file. */
  mediaDownloads: string[];
  kfDelivered: KfDelivered[];
  kfWaitFor(predicate: (delivered: KfDelivered[]) => boolean, timeoutMs?: number): Promise<KfDelivered[]>;
  /** How many `kf/sync_msg` calls were answered, and the cursors they came with ('' for none). */
  kfSyncCursors: string[];
}

/** A WeCom app's callback settings as the sender signs and encrypts with them. */
export interface WecomCallbackCredentials {
  token: string;
  encodingAesKey: string;
  corpId: string;
}

/** WeCom's text limit on `message/send`: 2,048 bytes of content. */
const TEXT_LIMIT_BYTES = 2048;

const SendRequest = z.object({
  touser: z.string().min(1),
  msgtype: z.literal('text'),
  agentid: z.number().int(),
  text: z.object({ content: z.string().min(1) }),
}).loose();

const KfSyncRequest = z.object({ cursor: z.string().optional(), token: z.string().optional(), limit: z.number().int().min(1).max(1000).default(1000), open_kfid: z.string().min(1) }).loose();
const KfSendRequest = z.object({ touser: z.string().min(1), open_kfid: z.string().min(1), msgtype: z.literal('text'), text: z.object({ content: z.string().min(1) }) }).loose();
/** How many messages the fake's `kf/sync_msg` gives per page (WeCom: up to `limit`, 1,000). */
const KF_PAGE = 3;

/**
 * A fake WeCom app API speaking the real wire format: `GET /cgi-bin/gettoken?corpid&corpsecret`
 * issues an access token (errcode 40001 for a wrong secret), `POST /cgi-bin/message/send?access_token`
 * takes a JSON text message (40014 for an unknown token, 42001 for an expired one, 45002 for content
 * over 2,048 bytes) and records it. Errors are HTTP 200 with an `errcode`, as WeCom answers.
 * Customer service: `POST /cgi-bin/kf/sync_msg` pages (3 at a time here, `has_more`, an opaque
 * `next_cursor`) through an account's messages from the cursor on, with a callback's token (95007
 * for one it did not issue; images as `msgtype: image` with a `media_id`, served by `GET
 * /cgi-bin/media/get`, 40007 for an unknown id); `POST /cgi-bin/kf/send_msg` records a text to a customer (95000 for
 * an unknown account, 45002 over 2,048 bytes).
 */
export async function startFakeWecom(opts: { corpId: string; secret: string }): Promise<FakeWecom> {
  const delivered: WecomDelivered[] = [];
  const waiters = new Waiters(() => delivered, 'WeCom messages');
  const valid = new Set<string>();
  const expired = new Set<string>();
  let issued = 0;
  const kfMessages = new Map<string, object[]>();
  const kfTokens = new Set<string>();
  const kfDelivered: KfDelivered[] = [];
  const kfSyncCursors: string[] = [];
  const kfWaiters = new Waiters(() => kfDelivered, 'WeCom customer-service messages');
  const media = new Map<string, { bytes: Buffer; contentType: string }>();
  const mediaDownloads: string[] = [];
  const token = (url: URL) => {
    const t = url.searchParams.get('access_token') ?? '';
    if (expired.has(t)) return { errcode: 42001, errmsg: 'access_token expired' };
    if (!valid.has(t)) return { errcode: 40014, errmsg: 'invalid access_token' };
    return undefined;
  };
  const json = (raw: string): unknown => {
    try {
      return JSON.parse(raw);
    } catch {
      return undefined;
    }
  };
  const server = createServer(async (req, res) => {
    const raw = (await readBody(req, 1024 * 1024)).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const answer = (body: object) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    if (req.method === 'GET' && url.pathname === '/cgi-bin/gettoken') {
      if (url.searchParams.get('corpid') !== opts.corpId) return answer({ errcode: 40013, errmsg: 'invalid corpid' });
      if (url.searchParams.get('corpsecret') !== opts.secret) return answer({ errcode: 40001, errmsg: 'invalid credential' });
      const token = randomBytes(24).toString('hex');
      valid.add(token);
      issued++;
      return answer({ errcode: 0, errmsg: 'ok', access_token: token, expires_in: 7200 });
    }
    if (req.method === 'POST' && url.pathname === '/cgi-bin/message/send') {
      const token = url.searchParams.get('access_token') ?? '';
      if (expired.has(token)) return answer({ errcode: 42001, errmsg: 'access_token expired' });
      if (!valid.has(token)) return answer({ errcode: 40014, errmsg: 'invalid access_token' });
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        return answer({ errcode: 47001, errmsg: 'data format error' });
      }
      const m = SendRequest.safeParse(json);
      if (!m.success) return answer({ errcode: 40008, errmsg: 'invalid message type' });
      if (Buffer.byteLength(m.data.text.content, 'utf8') > TEXT_LIMIT_BYTES) return answer({ errcode: 45002, errmsg: 'content size out of limit' });
      delivered.push({ touser: m.data.touser, agentid: m.data.agentid, content: m.data.text.content });
      return answer({ errcode: 0, errmsg: 'ok', invaliduser: '', msgid: randomBytes(8).toString('hex') });
    }
    if (req.method === 'POST' && url.pathname === '/cgi-bin/kf/sync_msg') {
      const refused = token(url);
      if (refused) return answer(refused);
      const m = KfSyncRequest.safeParse(json(raw));
      if (!m.success) return answer({ errcode: 47001, errmsg: 'data format error' });
      if (m.data.token !== undefined && !kfTokens.has(m.data.token)) return answer({ errcode: 95007, errmsg: 'invalid msg token' });
      kfSyncCursors.push(m.data.cursor ?? '');
      const list = kfMessages.get(m.data.open_kfid) ?? [];
      const from = m.data.cursor ? Number(/^c(\d+)$/.exec(m.data.cursor)?.[1] ?? NaN) : 0;
      if (!Number.isInteger(from)) return answer({ errcode: 95002, errmsg: 'invalid cursor' });
      const page = list.slice(from, from + Math.min(m.data.limit, KF_PAGE));
      const next = from + page.length;
      return answer({ errcode: 0, errmsg: 'ok', next_cursor: `c${next}`, has_more: next < list.length ? 1 : 0, msg_list: page });
    }
    if (req.method === 'GET' && url.pathname === '/cgi-bin/media/get') {
      const refused = token(url);
      if (refused) return answer(refused);
      const file = media.get(url.searchParams.get('media_id') ?? '');
      if (!file) return answer({ errcode: 40007, errmsg: 'invalid media_id' });
      mediaDownloads.push(url.searchParams.get('media_id') ?? '');
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.bytes.length), 'content-disposition': 'attachment; filename="image.jpg"' });
      return res.end(file.bytes);
    }
    if (req.method === 'POST' && url.pathname === '/cgi-bin/kf/send_msg') {
      const refused = token(url);
      if (refused) return answer(refused);
      const m = KfSendRequest.safeParse(json(raw));
      if (!m.success) return answer({ errcode: 47001, errmsg: 'data format error' });
      if (!kfMessages.has(m.data.open_kfid)) return answer({ errcode: 95000, errmsg: 'invalid open_kfid' });
      if (Buffer.byteLength(m.data.text.content, 'utf8') > TEXT_LIMIT_BYTES) return answer({ errcode: 45002, errmsg: 'content size out of limit' });
      kfDelivered.push({ touser: m.data.touser, openKfId: m.data.open_kfid, content: m.data.text.content });
      kfWaiters.notify();
      return answer({ errcode: 0, errmsg: 'ok', msgid: randomBytes(8).toString('hex') });
    }
    res.writeHead(404).end();
  });
  const url = await listen(server);
  const kfAdd = (openKfId: string, message: Record<string, unknown>) => {
    const list = kfMessages.get(openKfId) ?? [];
    kfMessages.set(openKfId, list);
    list.push(message);
    const t = randomBytes(16).toString('hex');
    kfTokens.add(t);
    return t;
  };
  return {
    kfCustomerSays: (m) => {
      const msgId = m.msgId ?? randomBytes(12).toString('hex');
      const t = kfAdd(m.openKfId, { msgid: msgId, open_kfid: m.openKfId, external_userid: m.customer, send_time: m.sendTime ?? Math.floor(Date.now() / 1000), origin: m.origin ?? 3, msgtype: 'text', text: { content: m.content } });
      return { token: t, msgId };
    },
    kfCustomerSendsImage: (m) => {
      const msgId = randomBytes(12).toString('hex');
      const mediaId = `3${randomBytes(20).toString('hex')}`;
      media.set(mediaId, { bytes: m.bytes, contentType: m.contentType });
      const t = kfAdd(m.openKfId, { msgid: msgId, open_kfid: m.openKfId, external_userid: m.customer, send_time: Math.floor(Date.now() / 1000), origin: 3, msgtype: 'image', image: { media_id: mediaId } });
      return { token: t, msgId, mediaId };
    },
    mediaDownloads,
    kfDelivered,
    kfWaitFor: (p, t) => kfWaiters.waitFor(p, t),
    kfSyncCursors,
    apiBaseUrl: `${url}/cgi-bin`,
    delivered,
    tokensIssued: () => issued,
    expireTokens: () => {
      for (const t of valid) expired.add(t);
      valid.clear();
    },
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: () => closeServer(server),
  };
}

/** A member's message to an app, as the XML WeCom encrypts into a callback. */
export function wecomTextXml(m: { corpId: string; from: string; agentId: number; msgId: string; content: string; createTime?: number }): string {
  const time = m.createTime ?? Math.floor(Date.now() / 1000);
  return `<xml><ToUserName><![CDATA[${m.corpId}]]></ToUserName><FromUserName><![CDATA[${m.from}]]></FromUserName><CreateTime>${time}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[${m.content}]]></Content><MsgId>${m.msgId}</MsgId><AgentID>${m.agentId}</AgentID></xml>`;
}

/** A fresh MsgId: WeCom numbers messages with 64-bit integers (up to 19 digits here). */
export const wecomMsgId = () => (randomBytes(8).readBigUInt64BE() >> 1n).toString();

const signedQuery = (creds: WecomCallbackCredentials, encrypted: string, opts: { signature?: string }) => {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = String(randomInt(1, 2 ** 31));
  return new URLSearchParams({ msg_signature: opts.signature ?? wecomSignature(creds.token, timestamp, nonce, encrypted), timestamp, nonce });
};

/**
 * A message callback as WeCom sends it: the XML encrypted for `receiverId` (the corp id unless a test
 * says otherwise), wrapped in `<xml><ToUserName/><AgentID/><Encrypt/></xml>`, signed in the query.
 */
export function sendWecomCallback(url: string, creds: WecomCallbackCredentials, messageXml: string, opts: { receiverId?: string; encrypted?: string; signature?: string; agentId?: number } = {}): Promise<Response> {
  const encrypted = opts.encrypted ?? encryptWecom(creds.encodingAesKey, messageXml, opts.receiverId ?? creds.corpId);
  const body = `<xml><ToUserName><![CDATA[${creds.corpId}]]></ToUserName><AgentID><![CDATA[${opts.agentId ?? ''}]]></AgentID><Encrypt><![CDATA[${encrypted}]]></Encrypt></xml>`;
  return fetch(`${url}?${signedQuery(creds, encrypted, opts).toString()}`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body });
}

/** The URL check WeCom makes when the callback URL is saved: a GET with an encrypted, signed `echostr`. */
export function sendWecomUrlCheck(url: string, creds: WecomCallbackCredentials, echo: string, opts: { signature?: string } = {}): Promise<Response> {
  const echostr = encryptWecom(creds.encodingAesKey, echo, creds.corpId);
  const query = signedQuery(creds, echostr, opts);
  query.set('echostr', echostr);
  return fetch(`${url}?${query.toString()}`);
}

/** The decrypted `kf_msg_or_event` callback WeCom sends when an account has messages waiting. */
export function wecomKfEventXml(m: { corpId: string; token: string; openKfId: string }): string {
  return `<xml><ToUserName><![CDATA[${m.corpId}]]></ToUserName><CreateTime>${Math.floor(Date.now() / 1000)}</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[kf_msg_or_event]]></Event><Token><![CDATA[${m.token}]]></Token><OpenKfId><![CDATA[${m.openKfId}]]></OpenKfId></xml>`;
}

/** A 43-character EncodingAESKey, as the WeCom and WeChat consoles generate one. */
export const newEncodingAesKey = () => randomBytes(33).toString('base64').replace(/[^A-Za-z0-9]/g, 'x').slice(0, 43);
