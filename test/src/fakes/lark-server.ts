import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { encryptLarkEvent, larkSignature } from '@conveyor/lark';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** An Open API call the fake Lark received (after the token check). */
export interface LarkCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

/** A message the bot sent, as a user would see it now (patches applied). */
export interface LarkMessage {
  messageId: string;
  /** The message it answers (`im.message.reply`), or '' for a new one. */
  replyTo: string;
  msgType: string;
  /** The text a user reads: a text message's text, a card's markdown. */
  text: string;
  patches: number;
}

export interface FakeLark {
  /** The Open API base (what a bot's `custom_domain` is set to). */
  url: string;
  calls: LarkCall[];
  /** How many tenant tokens were issued (the SDK should cache one). */
  tokensIssued(): number;
  /** Messages answering one inbound message id. */
  repliesTo(messageId: string): LarkMessage[];
  waitFor(predicate: (calls: LarkCall[]) => boolean, timeoutMs?: number): Promise<LarkCall[]>;
  close(): Promise<void>;
}

const Json = z.record(z.string(), z.unknown());
const Card = z.object({ config: z.object({ update_multi: z.boolean().optional() }).loose().optional(), elements: z.array(z.object({ tag: z.string(), content: z.string().optional() }).loose()) }).loose();

/** The text a user would read in a message's content, or null when the content does not fit its type. */
function readable(msgType: string, content: unknown): { text: string; shared: boolean } | null {
  if (typeof content !== 'string') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return null;
  }
  if (msgType === 'text') {
    const t = z.object({ text: z.string().min(1) }).safeParse(parsed);
    return t.success ? { text: t.data.text, shared: false } : null;
  }
  if (msgType === 'interactive') {
    const c = Card.safeParse(parsed);
    return c.success ? { text: c.data.elements.map((e) => e.content ?? '').join(''), shared: c.data.config?.update_multi === true } : null;
  }
  return null;
}

/**
 * A fake Lark / Feishu Open API speaking the real wire format: the tenant access token from
 * `POST /open-apis/auth/v3/tenant_access_token/internal`, then `Authorization: Bearer` on
 * `im/v1/messages` create, `:message_id/reply` (deduplicated by `uuid`) and `PATCH :message_id`
 * (interactive cards with `update_multi` only, as Lark allows). Answers `{code, msg, data}`.
 */
export async function startFakeLark(opts: { appId: string; appSecret: string }): Promise<FakeLark> {
  const calls: LarkCall[] = [];
  const waiters = new Waiters(() => calls, 'lark calls');
  const tokens = new Set<string>();
  const messages = new Map<string, LarkMessage & { shared: boolean }>();
  const byUuid = new Map<string, string>();
  let nextId = 1;
  const server = createServer(async (req, res) => {
    const raw = (await readBody(req)).toString('utf8');
    const reply = (status: number, body: Record<string, unknown>) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    let body: Record<string, unknown> = {};
    if (raw) {
      try {
        body = Json.parse(JSON.parse(raw));
      } catch {
        return reply(400, { code: 9499, msg: 'Bad Request: invalid JSON' });
      }
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'POST' && url.pathname === '/open-apis/auth/v3/tenant_access_token/internal') {
      if (body.app_id !== opts.appId || body.app_secret !== opts.appSecret) return reply(200, { code: 10014, msg: 'app secret invalid' });
      const token = `t-${randomBytes(12).toString('hex')}`;
      tokens.add(token);
      return reply(200, { code: 0, msg: 'ok', tenant_access_token: token, expire: 7200 });
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!tokens.has(token)) return reply(400, { code: 99991663, msg: 'Invalid access token for authorization.' });
    calls.push({ method: req.method ?? '', path: url.pathname, body });
    const send = (replyTo: string) => {
      const msgType = String(body.msg_type ?? '');
      const shown = readable(msgType, body.content);
      if (!shown) return reply(400, { code: 230001, msg: 'invalid message content' });
      const uuid = typeof body.uuid === 'string' ? body.uuid : '';
      const seen = uuid ? byUuid.get(uuid) : undefined;
      const messageId = seen ?? `om_${nextId++}`;
      if (!seen) {
        messages.set(messageId, { messageId, replyTo, msgType, text: shown.text, patches: 0, shared: shown.shared });
        if (uuid) byUuid.set(uuid, messageId);
      }
      return reply(200, { code: 0, msg: 'success', data: { message_id: messageId, msg_type: msgType, body: { content: body.content } } });
    };
    const replyMatch = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(url.pathname);
    if (req.method === 'POST' && replyMatch) return send(decodeURIComponent(replyMatch[1] ?? ''));
    if (req.method === 'POST' && url.pathname === '/open-apis/im/v1/messages') {
      if (!url.searchParams.get('receive_id_type') || typeof body.receive_id !== 'string') return reply(400, { code: 230001, msg: 'receive_id_type and receive_id are required' });
      return send('');
    }
    const patchMatch = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'PATCH' && patchMatch) {
      const msg = messages.get(decodeURIComponent(patchMatch[1] ?? ''));
      if (!msg) return reply(400, { code: 230011, msg: 'message not found' });
      const shown = readable('interactive', body.content);
      if (msg.msgType !== 'interactive' || !msg.shared || !shown) return reply(400, { code: 230099, msg: 'only a shared card (update_multi) can be patched' });
      msg.text = shown.text;
      msg.patches++;
      return reply(200, { code: 0, msg: 'success', data: {} });
    }
    return reply(404, { code: 404, msg: 'not found' });
  });
  const base = await listen(server);
  return {
    url: base,
    calls,
    tokensIssued: () => tokens.size,
    repliesTo: (messageId) => [...messages.values()].filter((m) => m.replyTo === messageId).map(({ shared: _shared, ...m }) => m),
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: () => closeServer(server),
  };
}

/**
 * Sends an event the way Lark does: with an encrypt key the body is `{"encrypt": ...}` (AES-256-CBC)
 * and the request carries `X-Lark-Request-Timestamp`, `X-Lark-Request-Nonce` and `X-Lark-Signature`
 * (SHA-256 of timestamp + nonce + key + body); `signWith` signs with another key (a forgery).
 */
export function sendLarkEvent(url: string, body: unknown, opts: { encryptKey?: string; signWith?: string; rawBody?: string; unsigned?: boolean } = {}): Promise<Response> {
  const plain = opts.rawBody ?? JSON.stringify(body);
  const raw = opts.encryptKey && opts.rawBody === undefined ? JSON.stringify({ encrypt: encryptLarkEvent(opts.encryptKey, plain) }) : plain;
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  const key = opts.signWith ?? opts.encryptKey;
  if (key && !opts.unsigned) {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const nonce = randomBytes(8).toString('hex');
    headers['x-lark-request-timestamp'] = timestamp;
    headers['x-lark-request-nonce'] = nonce;
    headers['x-lark-signature'] = larkSignature(key, timestamp, nonce, Buffer.from(raw, 'utf8'));
  }
  return fetch(url, { method: 'POST', headers, body: raw });
}
