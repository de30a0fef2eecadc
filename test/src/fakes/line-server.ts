import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { lineSignature } from '@conveyor/line';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** A message the fake LINE delivered to a chat, and how (with a reply token, or pushed). */
export interface LineDelivered {
  to: string;
  via: 'reply' | 'push';
  text: string;
  retryKey?: string;
}

export interface FakeLine {
  /** The Messaging API base URL (what a bot's `api_base_url` is set to). */
  url: string;
  delivered: LineDelivered[];
  /** A reply token for a webhook event of `chat`, accepted once. */
  issueReplyToken(chat: string): string;
  waitFor(predicate: (delivered: LineDelivered[]) => boolean, timeoutMs?: number): Promise<LineDelivered[]>;
  close(): Promise<void>;
}

const Messages = z.array(z.object({ type: z.string(), text: z.string().optional() }).loose()).min(1).max(5);
const ReplyRequest = z.object({ replyToken: z.string(), messages: Messages }).loose();
const PushRequest = z.object({ to: z.string(), messages: Messages }).loose();

/**
 * A fake LINE Messaging API speaking the real wire format: `POST /v2/bot/message/reply` and
 * `/v2/bot/message/push` with JSON and `Authorization: Bearer {channel access token}`. A reply token
 * is accepted once (then 400 "Invalid reply token", as LINE answers); a push repeated with the same
 * `X-Line-Retry-Key` is 409.
 */
export async function startFakeLine(opts: { channelAccessToken: string }): Promise<FakeLine> {
  const delivered: LineDelivered[] = [];
  const waiters = new Waiters(() => delivered, 'LINE messages');
  const tokens = new Map<string, string>();
  const retryKeys = new Set<string>();
  const server = createServer(async (req, res) => {
    const raw = (await readBody(req)).toString('utf8');
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    if (req.headers.authorization !== `Bearer ${opts.channelAccessToken}`) return reply(401, { message: 'Authentication failed' });
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return reply(400, { message: 'The request body has 1 error(s)' });
    }
    if (req.url === '/v2/bot/message/reply') {
      const r = ReplyRequest.safeParse(json);
      if (!r.success) return reply(400, { message: 'The request body has 1 error(s)' });
      const to = tokens.get(r.data.replyToken);
      if (!to) return reply(400, { message: 'Invalid reply token' });
      tokens.delete(r.data.replyToken);
      for (const m of r.data.messages) delivered.push({ to, via: 'reply', text: m.text ?? '' });
      return reply(200, { sentMessages: r.data.messages.map((_, i) => ({ id: String(i), quoteToken: 'q' })) });
    }
    if (req.url === '/v2/bot/message/push') {
      const p = PushRequest.safeParse(json);
      if (!p.success) return reply(400, { message: 'The request body has 1 error(s)' });
      const key = req.headers['x-line-retry-key'];
      const retryKey = typeof key === 'string' ? key : undefined;
      if (retryKey !== undefined) {
        if (retryKeys.has(retryKey)) return reply(409, { message: 'The retry key is already accepted' });
        retryKeys.add(retryKey);
      }
      for (const m of p.data.messages) delivered.push({ to: p.data.to, via: 'push', text: m.text ?? '', ...(retryKey !== undefined ? { retryKey } : {}) });
      return reply(200, { sentMessages: p.data.messages.map((_, i) => ({ id: String(i), quoteToken: 'q' })) });
    }
    return reply(404, { message: 'Not found' });
  });
  const url = await listen(server);
  return {
    url,
    delivered,
    issueReplyToken: (chat) => {
      const token = randomBytes(16).toString('hex');
      tokens.set(token, chat);
      return token;
    },
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: () => closeServer(server),
  };
}

/** Sends a webhook request the way LINE does: JSON body, `X-Line-Signature` = base64 HMAC-SHA256 of it with the channel secret. */
export function sendLineWebhook(url: string, channelSecret: string, body: unknown, opts: { rawBody?: string } = {}): Promise<Response> {
  const raw = opts.rawBody ?? JSON.stringify(body);
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-line-signature': lineSignature(channelSecret, Buffer.from(raw, 'utf8')) },
    body: raw,
  });
}
