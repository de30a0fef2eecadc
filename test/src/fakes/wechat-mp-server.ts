import { createServer } from 'node:http';
import { randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import { decryptWecom, encryptWecom, parseXmlFields, sortedSha1 } from '@conveyor/wecom';
import { Waiters, closeServer, listen, readBody } from './http-util.js';
import type { FakeTextApi } from './wecom-server.js';

/** A customer-service text message the fake WeChat delivered to a follower. */
export interface WechatDelivered {
  touser: string;
  content: string;
}

export type FakeWechatMp = FakeTextApi<WechatDelivered>;

/** An Official Account's server configuration as WeChat signs (and, in safe mode, encrypts) with it. */
export interface WechatMpCredentials {
  token: string;
  encodingAesKey: string;
  appId: string;
  /** The account's original id (gh_…), the messages' `ToUserName`. */
  accountId: string;
}

/** WeChat's limit on a customer-service text message. */
const TEXT_LIMIT_BYTES = 2048;

const SendRequest = z.object({ touser: z.string().min(1), msgtype: z.literal('text'), text: z.object({ content: z.string().min(1) }) }).loose();

/**
 * A fake WeChat Official Account API speaking the real wire format: `GET /cgi-bin/token?grant_type=
 * client_credential&appid&secret` issues an access token (40013 for a wrong AppID, 40001 for a wrong
 * secret; each new token ends the previous ones, as WeChat's do), `POST /cgi-bin/message/custom/send
 * ?access_token` takes a JSON text message (40001 for a token that is not the latest, 42001 for an
 * expired one, 45002 for content over 2,048 bytes) and records it. Errors are HTTP 200 with an
 * `errcode`, as WeChat answers.
 */
export async function startFakeWechatMp(opts: { appId: string; secret: string }): Promise<FakeWechatMp> {
  const delivered: WechatDelivered[] = [];
  const waiters = new Waiters(() => delivered, 'WeChat customer-service messages');
  let current = '';
  const expired = new Set<string>();
  let issued = 0;
  const server = createServer(async (req, res) => {
    const raw = (await readBody(req, 1024 * 1024)).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const answer = (body: object) => {
      res.writeHead(200, { 'content-type': 'application/json; encoding=utf-8' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    if (req.method === 'GET' && url.pathname === '/cgi-bin/token') {
      if (url.searchParams.get('grant_type') !== 'client_credential') return answer({ errcode: 40002, errmsg: 'invalid grant_type' });
      if (url.searchParams.get('appid') !== opts.appId) return answer({ errcode: 40013, errmsg: 'invalid appid' });
      if (url.searchParams.get('secret') !== opts.secret) return answer({ errcode: 40001, errmsg: 'invalid credential' });
      current = randomBytes(24).toString('hex');
      issued++;
      return answer({ access_token: current, expires_in: 7200 });
    }
    if (req.method === 'POST' && url.pathname === '/cgi-bin/message/custom/send') {
      const token = url.searchParams.get('access_token') ?? '';
      if (expired.has(token)) return answer({ errcode: 42001, errmsg: 'access_token expired' });
      if (!token || token !== current) return answer({ errcode: 40001, errmsg: 'invalid credential, access_token is invalid or not latest' });
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        return answer({ errcode: 47001, errmsg: 'data format error' });
      }
      const m = SendRequest.safeParse(json);
      if (!m.success) return answer({ errcode: 40008, errmsg: 'invalid message type' });
      if (Buffer.byteLength(m.data.text.content, 'utf8') > TEXT_LIMIT_BYTES) return answer({ errcode: 45002, errmsg: 'content size out of limit' });
      delivered.push({ touser: m.data.touser, content: m.data.text.content });
      return answer({ errcode: 0, errmsg: 'ok' });
    }
    res.writeHead(404).end();
  });
  const url = await listen(server);
  return {
    apiBaseUrl: `${url}/cgi-bin`,
    delivered,
    tokensIssued: () => issued,
    expireTokens: () => {
      if (current) expired.add(current);
    },
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: () => closeServer(server),
  };
}

/** A follower's text message, as the XML WeChat POSTs (or encrypts). */
export function wechatTextXml(m: { accountId: string; from: string; msgId: string; content: string; createTime?: number }): string {
  const time = m.createTime ?? Math.floor(Date.now() / 1000);
  return `<xml><ToUserName><![CDATA[${m.accountId}]]></ToUserName><FromUserName><![CDATA[${m.from}]]></FromUserName><CreateTime>${time}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[${m.content}]]></Content><MsgId>${m.msgId}</MsgId></xml>`;
}

/** An OpenID as WeChat issues them: 28 characters of `[A-Za-z0-9_-]`. */
export const wechatOpenId = () => `o${randomBytes(21).toString('base64url').slice(0, 27)}`;

function signedQuery(creds: WechatMpCredentials, opts: { signature?: string | undefined; timestamp?: string | undefined }) {
  const timestamp = opts.timestamp ?? String(Math.floor(Date.now() / 1000));
  const nonce = String(randomInt(1, 2 ** 31));
  return new URLSearchParams({ signature: opts.signature ?? sortedSha1([creds.token, timestamp, nonce]), timestamp, nonce });
}

export interface WechatCallbackOptions {
  /** Safe mode: the message encrypted for `receiverId` (default the AppID), signed over its ciphertext. */
  encrypted?: boolean;
  receiverId?: string;
  /** A forged `signature` (plain mode) or `msg_signature` (safe mode). */
  signature?: string;
  timestamp?: string;
  /** A query captured from an earlier call (a replay). */
  query?: URLSearchParams;
}

/** A message as WeChat sends it to the server URL: plain (signed query), or in safe mode encrypted. */
export function sendWechatMessage(url: string, creds: WechatMpCredentials, messageXml: string, opts: WechatCallbackOptions = {}): Promise<{ res: Response; query: URLSearchParams }> {
  const query = opts.query ?? signedQuery(creds, { signature: opts.encrypted ? undefined : opts.signature, timestamp: opts.timestamp });
  let body = messageXml;
  if (opts.encrypted) {
    const enc = encryptWecom(creds.encodingAesKey, messageXml, opts.receiverId ?? creds.appId);
    query.set('encrypt_type', 'aes');
    query.set('msg_signature', opts.signature ?? sortedSha1([creds.token, query.get('timestamp') ?? '', query.get('nonce') ?? '', enc]));
    body = `<xml><ToUserName><![CDATA[${creds.accountId}]]></ToUserName><Encrypt><![CDATA[${enc}]]></Encrypt></xml>`;
  }
  return fetch(`${url}?${query.toString()}`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body }).then((res) => ({ res, query }));
}

/** The URL check WeChat makes when the server URL is saved: a signed GET whose `echostr` must come back. */
export function sendWechatUrlCheck(url: string, creds: WechatMpCredentials, echostr: string, opts: { signature?: string } = {}): Promise<Response> {
  const query = signedQuery(creds, opts);
  query.set('echostr', echostr);
  return fetch(`${url}?${query.toString()}`);
}

/**
 * A passive reply as WeChat reads it: the reply XML's fields, after checking the safe-mode envelope's
 * signature and decrypting it for the AppID; undefined for `success` or an empty body (no reply).
 */
export function readWechatPassiveReply(body: string, creds: WechatMpCredentials): Record<string, string> | undefined {
  if (body === '' || body === 'success') return undefined;
  const outer = parseXmlFields(body);
  if (!outer.ok) throw new Error(`the passive reply is not XML: ${outer.error}`);
  const enc = outer.fields['Encrypt'];
  if (enc === undefined) return outer.fields;
  const { MsgSignature: sig, TimeStamp: t = '', Nonce: n = '' } = outer.fields;
  if (sig !== sortedSha1([creds.token, t, n, enc])) throw new Error('the passive reply\'s MsgSignature does not hold');
  const inner = decryptWecom(creds.encodingAesKey, enc, creds.appId);
  if (!inner.ok) throw new Error(`the passive reply does not decrypt: ${inner.reason}`);
  const fields = parseXmlFields(inner.message);
  if (!fields.ok) throw new Error(`the decrypted passive reply is not XML: ${fields.error}`);
  return fields.fields;
}
