import { randomBytes, randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { decryptWecom, encryptWecom, sortedSha1 } from '@conveyor/wecom';

/**
 * WeCom's side of an AI bot in webhook mode. There is no WeCom API for the bot to call (replies go
 * back in the answers to WeCom's callbacks), so this fake is the sender: it signs and encrypts
 * callbacks as WeCom does (JSON `{"encrypt"}`, `msg_signature` over the ciphertext, encrypted for
 * the empty receiver id of AI bots), checks and decrypts the answers, and refreshes a stream the
 * way WeCom's client does until it is finished.
 */
export interface WecomBotCredentials {
  token: string;
  encodingAesKey: string;
}

const Envelope = z.object({ encrypt: z.string(), msgsignature: z.string(), timestamp: z.number(), nonce: z.string() });
const StreamAnswer = z.object({ msgtype: z.literal('stream'), stream: z.object({ id: z.string(), finish: z.boolean(), content: z.string() }) });
export type WecomBotStream = z.output<typeof StreamAnswer>['stream'];

export interface WecomBotSendOptions {
  signature?: string;
  receiverId?: string;
  /** The encrypted JSON as sent, instead of encrypting `message`. */
  encrypted?: string;
  /** The body as sent, instead of `{"encrypt"}`. */
  rawBody?: string;
}

/** Sends one callback (the JSON WeCom encrypts) and returns the HTTP answer. */
export function sendWecomBotCallback(url: string, creds: WecomBotCredentials, message: object, opts: WecomBotSendOptions = {}): Promise<Response> {
  const encrypted = opts.encrypted ?? encryptWecom(creds.encodingAesKey, JSON.stringify(message), opts.receiverId ?? '');
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = String(randomInt(1, 2 ** 31));
  const query = new URLSearchParams({ msg_signature: opts.signature ?? sortedSha1([creds.token, timestamp, nonce, encrypted]), timestamp, nonce });
  return fetch(`${url}?${query.toString()}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: opts.rawBody ?? JSON.stringify({ encrypt: encrypted }) });
}

/** The URL check made when the callback URL is saved: a signed GET with the encrypted `echostr`. */
export function sendWecomBotUrlCheck(url: string, creds: WecomBotCredentials, echo: string): Promise<Response> {
  const echostr = encryptWecom(creds.encodingAesKey, echo, '');
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = String(randomInt(1, 2 ** 31));
  const query = new URLSearchParams({ msg_signature: sortedSha1([creds.token, timestamp, nonce, echostr]), timestamp, nonce, echostr });
  return fetch(`${url}?${query.toString()}`);
}

/** An answer's stream message, as WeCom reads it: the envelope's signature checked, decrypted for the empty receiver id. */
export async function readWecomBotStream(res: Response, creds: WecomBotCredentials): Promise<WecomBotStream> {
  if (res.status !== 200) throw new Error(`the callback was answered ${res.status}: ${await res.text()}`);
  const env = Envelope.parse(await res.json());
  if (env.msgsignature !== sortedSha1([creds.token, String(env.timestamp), env.nonce, env.encrypt])) throw new Error('the answer\'s msgsignature does not hold');
  const plain = decryptWecom(creds.encodingAesKey, env.encrypt, '');
  if (!plain.ok) throw new Error(`the answer does not decrypt: ${plain.reason}`);
  return StreamAnswer.parse(JSON.parse(plain.message)).stream;
}

/** A member's text to the bot: a single chat, or a group (`chatId`) where they mentioned it. */
export function wecomBotTextMessage(m: { aibotid: string; userId: string; content: string; chatId?: string; msgId?: string }): object {
  return {
    msgid: m.msgId ?? randomBytes(12).toString('hex'),
    aibotid: m.aibotid,
    ...(m.chatId ? { chatid: m.chatId } : {}),
    chattype: m.chatId ? 'group' : 'single',
    from: { userid: m.userId },
    response_url: 'https://qyapi.weixin.qq.com/cgi-bin/aibot/response?response_code=fake',
    msgtype: 'text',
    text: { content: m.content },
  };
}

/**
 * Refreshes a stream as WeCom's client does (a `msgtype: stream` callback every `intervalMs`) until
 * it is finished or `timeoutMs` passed; returns every content seen, the last one finished.
 */
export async function refreshWecomBotStream(url: string, creds: WecomBotCredentials, m: { aibotid: string; userId: string; chatId?: string; streamId: string }, opts: { intervalMs?: number; timeoutMs?: number; onRefresh?: (s: WecomBotStream) => void } = {}): Promise<WecomBotStream[]> {
  const seen: WecomBotStream[] = [];
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    const refresh = { msgid: randomBytes(12).toString('hex'), aibotid: m.aibotid, ...(m.chatId ? { chatid: m.chatId } : {}), chattype: m.chatId ? 'group' : 'single', from: { userid: m.userId }, msgtype: 'stream', stream: { id: m.streamId } };
    const s = await readWecomBotStream(await sendWecomBotCallback(url, creds, refresh), creds);
    seen.push(s);
    opts.onRefresh?.(s);
    if (s.finish) return seen;
    if (Date.now() > deadline) throw new Error(`stream ${m.streamId} not finished within the timeout (last content ${JSON.stringify(s.content.slice(0, 80))})`);
    await delay(opts.intervalMs ?? 200);
  }
}
