import { createServer } from 'node:http';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** A call the fake Bot API received. */
export interface TelegramCall {
  method: string;
  token: string;
  params: Record<string, any>;
  at: number;
}

export interface FakeTelegram {
  /** The Bot API base URL (what a bot's `api_base_url` is set to). */
  url: string;
  calls: TelegramCall[];
  /** Text of every message per chat as the user would see it now (sends and edits applied). */
  chat(chatId: number): { message_id: number; text: string; edits: number }[];
  waitFor(predicate: (calls: TelegramCall[]) => boolean, timeoutMs?: number): Promise<TelegramCall[]>;
  close(): Promise<void>;
}

/**
 * A fake Telegram Bot API speaking the real wire format: `POST /bot{token}/{method}` with JSON,
 * answering `{ok: true, result}` or `{ok: false, error_code, description}`. Implements sendMessage
 * and editMessageText (including "message is not modified"), with an optional delay per call.
 */
export async function startFakeTelegram(opts: { token: string; delayMs?: number }): Promise<FakeTelegram> {
  const calls: TelegramCall[] = [];
  const waiters = new Waiters(() => calls, 'telegram calls');
  const chats = new Map<number, { message_id: number; text: string; edits: number }[]>();
  let nextId = 1000;
  const server = createServer(async (req, res) => {
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? '');
    const raw = await readBody(req);
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    if (!m) return reply(404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, token, method] = m;
    if (token !== opts.token) return reply(401, { ok: false, error_code: 401, description: 'Unauthorized' });
    let params: Record<string, any>;
    try {
      params = JSON.parse(raw.toString('utf8'));
    } catch {
      return reply(400, { ok: false, error_code: 400, description: 'Bad Request: invalid JSON' });
    }
    if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
    calls.push({ method, token, params, at: performance.now() });
    const chatId = Number(params.chat_id);
    const messages = chats.get(chatId) ?? [];
    chats.set(chatId, messages);
    if (method === 'sendMessage') {
      if (!params.text) return reply(400, { ok: false, error_code: 400, description: 'Bad Request: message text is empty' });
      const msg = { message_id: nextId++, text: String(params.text), edits: 0 };
      messages.push(msg);
      return reply(200, { ok: true, result: { message_id: msg.message_id, chat: { id: chatId }, date: Math.floor(Date.now() / 1000), text: msg.text } });
    }
    if (method === 'editMessageText') {
      const msg = messages.find((x) => x.message_id === Number(params.message_id));
      if (!msg) return reply(400, { ok: false, error_code: 400, description: 'Bad Request: message to edit not found' });
      if (msg.text === params.text) return reply(400, { ok: false, error_code: 400, description: 'Bad Request: message is not modified' });
      msg.text = String(params.text);
      msg.edits++;
      return reply(200, { ok: true, result: { message_id: msg.message_id, chat: { id: chatId }, text: msg.text } });
    }
    return reply(404, { ok: false, error_code: 404, description: `Not Found: method ${method}` });
  });
  const url = await listen(server);
  return {
    url,
    calls,
    chat: (chatId) => chats.get(chatId) ?? [],
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: () => closeServer(server),
  };
}
