import { randomInt } from 'node:crypto';
import { inboundQuery, webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { decryptWecom, encryptWecom, wecomSignedParams, sortedSha1, verifySortedSha1, WECOM_CALLBACK_BODY_LIMIT } from '@conveyor/wecom';
import { WecomBotAdapter } from './adapter.js';
import { usesWebhook, WecomBotConfigSchema, type WecomBotConfig } from './config.js';
import { wecomBotConnection } from './connection.js';
import { EncryptedJson, parseWecomBotCallback, streamIdOf, wecomBotMessage } from './parse.js';
import { WECOM_BOT } from './name.js';
import { readStream } from './stream.js';

export { WECOM_BOT } from './name.js';

const refuse = (status: number, error: string): WebhookOutcome => ({ kind: 'answer', answer: { status, body: error, type: 'text' } });

/** Decrypts for the AI bot's empty receiver id, or the configured corp id; the receiver it was for answers the callback. */
function decrypt(config: WecomBotConfig, encrypted: string): { ok: true; plain: string; receiver: string } | { ok: false; outcome: WebhookOutcome } {
  let d = decryptWecom(config.EncodingAESKey, encrypted, '');
  let receiver = '';
  if (!d.ok && d.code === 'wrong_receiver' && config.Corpid) {
    d = decryptWecom(config.EncodingAESKey, encrypted, config.Corpid);
    receiver = config.Corpid;
  }
  if (d.ok) return { ok: true, plain: d.message, receiver };
  return { ok: false, outcome: refuse(400, d.code === 'wrong_receiver' ? 'bad receiver id: the message is encrypted for another receiver' : `undecryptable message: ${d.reason}`) };
}

/** A passive answer: the JSON encrypted for `receiver`, signed, in WeCom's `{encrypt, msgsignature, timestamp, nonce}`. */
export function encryptedAnswer(config: WecomBotConfig, receiver: string, message: object, now: () => number = Date.now): HttpAnswer {
  const timestamp = String(Math.floor(now() / 1000));
  const nonce = String(randomInt(1, 2 ** 31));
  const encrypt = encryptWecom(config.EncodingAESKey, JSON.stringify(message), receiver);
  return { status: 200, body: { encrypt, msgsignature: sortedSha1([config.Token, timestamp, nonce, encrypt]), timestamp: Number(timestamp), nonce } };
}

/** The stream message WeCom shows: its id, the content so far, whether it is finished. */
const streamMessage = (id: string, content: string, finish: boolean) => ({ msgtype: 'stream', stream: { id, finish, content } });

/**
 * A WeCom AI bot's callback in webhook mode (its URL is `/bots/{bot_id}`): JSON, encrypted
 * (`{"encrypt": …}`), signed over the ciphertext (`msg_signature`). A GET is the URL check (the
 * decrypted `echostr`). A member's text (a single chat, or a group where the bot was mentioned)
 * becomes a query of that chat and is answered at once with the start of the reply's stream; WeCom
 * then sends refresh callbacks for the stream, each answered with its content so far and whether it
 * is finished (the dispatcher keeps it, see `WecomBotAdapter`), until it is.
 */
export const wecomBotInbound: PlatformInbound<WecomBotConfig> = {
  bodyLimitBytes: WECOM_CALLBACK_BODY_LIMIT,
  handle(req, config): WebhookOutcome {
    if (!usesWebhook(config)) return refuse(403, 'enable-webhook is off for this bot: its messages come over the long connection the gateway holds');
    if (req.method !== 'GET' && req.method !== 'POST') return { kind: 'answer', answer: { status: 405, body: 'method not allowed: GET (URL check) or POST (callbacks)', type: 'text', headers: { Allow: 'GET, POST' } } };
    const p = wecomSignedParams(req);
    if (!p.ok) return p.outcome;
    let encrypted: string;
    if (req.method === 'GET') {
      const echostr = req.query['echostr'];
      if (!echostr) return refuse(400, 'bad query parameter: echostr is missing');
      encrypted = echostr;
    } else {
      let body: unknown;
      try {
        body = JSON.parse(req.rawBody.toString('utf8'));
      } catch {
        return refuse(400, 'malformed callback: not JSON');
      }
      const envelope = EncryptedJson.safeParse(body);
      if (!envelope.success) return refuse(400, `malformed callback: ${envelope.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`);
      encrypted = envelope.data.encrypt;
    }
    if (!verifySortedSha1([config.Token, p.timestamp, p.nonce, encrypted], p.signature)) return refuse(401, 'invalid signature');
    const opened = decrypt(config, encrypted);
    if (!opened.ok) return opened.outcome;
    if (req.method === 'GET') return { kind: 'answer', answer: { status: 200, body: opened.plain, type: 'text' } };
    const parsed = parseWecomBotCallback(opened.plain);
    if (!parsed.ok) return refuse(400, `malformed message: ${parsed.error}`);
    const cb = parsed.callback;
    if (cb.kind === 'skip') return { kind: 'drop', reason: `not a message a query is made of: ${cb.reason}` };
    if (cb.kind === 'refresh') {
      const streamId = cb.streamId;
      return {
        kind: 'pull',
        ref: { streamId },
        pull: async (ctx) => {
          const s = await readStream(ctx.redis, ctx.prefix, req.botId, streamId);
          return encryptedAnswer(config, opened.receiver, streamMessage(streamId, s.content, s.finish));
        },
      };
    }
    if (config.BotId && cb.botId && cb.botId !== config.BotId) return refuse(400, 'bad aibotid: the callback is for another bot');
    const message = wecomBotMessage(cb, req.botId, config.robot_name);
    if (!message.messageChain.some((c) => c.type !== 'At')) return { kind: 'drop', reason: 'no content', ref: { msgId: cb.msgId } };
    const streamId = streamIdOf(req.botId, cb.msgId);
    return {
      kind: 'publish',
      ref: { msgId: cb.msgId },
      accepted: encryptedAnswer(config, opened.receiver, streamMessage(streamId, '', false)),
      queries: [inboundQuery(message, { replyTo: streamId, dedupId: cb.msgId, stream: true })],
    };
  },
  // Not answered with 200 within 5 s, WeCom sends the callback again.
  answers: webhookAnswers({ status: 200, body: '', type: 'text' }, (status, error) => ({ status, body: error, type: 'text' })),
};

export const wecomBotPlatform: Platform<WecomBotConfig> = {
  name: WECOM_BOT,
  botConfigSchema: WecomBotConfigSchema,
  configurable: true,
  streamsByDefault: true,
  inbound: wecomBotInbound,
  connection: wecomBotConnection,
  outbound: (deps) => new WecomBotAdapter(deps),
};
