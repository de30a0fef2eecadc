import { randomInt } from 'node:crypto';
import { plainText, type MessageComponent } from '@conveyor/contracts';
import { webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type ReplyHold, type WebhookOutcome, type WebhookRequest } from '@conveyor/platform-kit';
import { decryptWecom, EncryptedEnvelope, encryptWecom, parseXmlFields, sortedSha1, verifySortedSha1 } from '@conveyor/wecom';
import { OfficialAccountAdapter, PASSIVE_TEXT_BYTES } from './adapter.js';
import { OfficialAccountConfigSchema, type OfficialAccountConfig } from './config.js';
import { parseOfficialAccountMessage, passiveTextXml, type OfficialAccountInbound } from './parse.js';
import { OFFICIAL_ACCOUNT } from './name.js';

export { OFFICIAL_ACCOUNT } from './name.js';

/**
 * WeChat waits 5 s for the answer, then sends the message again (three times in all); the held call
 * answers before that, leaving time for the answer to travel.
 */
export const PASSIVE_WINDOW_MS = 4_000;
/**
 * Plain mode signs only the query (token, timestamp, nonce), not the body: a signed query is taken
 * once (see `OnceCredential`) within this window of its timestamp, and refused outside it, so a
 * captured URL cannot carry another body.
 */
export const TIMESTAMP_WINDOW_MS = 10 * 60_000;

/** "success" (or an empty body) tells WeChat the message is taken and no passive reply follows. */
const success: HttpAnswer = { status: 200, body: 'success', type: 'text' };
const refuse = (status: number, error: string): WebhookOutcome => ({ kind: 'answer', answer: { status, body: error, type: 'text' } });

/** A message is a few hundred bytes; anything near this is not WeChat. */
const BODY_LIMIT = 64 * 1024;

interface Signed {
  signature: string;
  timestamp: string;
  nonce: string;
}

/** The signed query parameters (`signature`, or `msg_signature` for an encrypted body), or the answer naming the one missing. */
function signedParams(req: WebhookRequest, name: 'signature' | 'msg_signature'): { ok: true; p: Signed } | { ok: false; outcome: WebhookOutcome } {
  const { [name]: signature, timestamp, nonce } = req.query;
  if (!signature) return { ok: false, outcome: refuse(401, `invalid signature: missing ${name}`) };
  const bad = (field: string) => ({ ok: false as const, outcome: refuse(400, `bad query parameter: ${field} is missing or too long`) });
  if (!timestamp || timestamp.length > 64) return bad('timestamp');
  if (!nonce || nonce.length > 64) return bad('nonce');
  return { ok: true, p: { signature, timestamp, nonce } };
}

/** The passive answer carrying `text`: the reply XML, encrypted and signed again when the message came encrypted. */
function passiveAnswer(config: OfficialAccountConfig, m: OfficialAccountInbound, text: string, encrypted: boolean, now: () => number): HttpAnswer {
  const seconds = Math.floor(now() / 1000);
  const xml = passiveTextXml({ openId: m.openId, accountId: m.accountId, content: text, createTime: seconds });
  if (!encrypted) return { status: 200, body: xml, type: 'text', headers: { 'Content-Type': 'application/xml; charset=utf-8' } };
  const timestamp = String(seconds);
  const nonce = String(randomInt(1, 2 ** 31));
  const enc = encryptWecom(config.EncodingAESKey, xml, config.AppID);
  const signature = sortedSha1([config.token, timestamp, nonce, enc]);
  const body = `<xml><Encrypt><![CDATA[${enc}]]></Encrypt><MsgSignature><![CDATA[${signature}]]></MsgSignature><TimeStamp>${timestamp}</TimeStamp><Nonce><![CDATA[${nonce}]]></Nonce></xml>`;
  return { status: 200, body, type: 'text', headers: { 'Content-Type': 'application/xml; charset=utf-8' } };
}

/**
 * The hold of a message's call: its reply, if ready within the window and short enough, is the
 * passive answer; otherwise `success` (drop mode) or LoadingMessage (passive mode), and the reply
 * goes out through the customer-service message API.
 */
function replyHold(config: OfficialAccountConfig, m: OfficialAccountInbound, encrypted: boolean, now: () => number): ReplyHold {
  const late = config.Mode === 'passive' && config.LoadingMessage.trim() ? passiveAnswer(config, m, config.LoadingMessage, encrypted, now) : success;
  return {
    key: m.msgId,
    waitMs: PASSIVE_WINDOW_MS,
    answer: (parts: readonly MessageComponent[]) => {
      const text = plainText([...parts]);
      // The adapter hands over an empty part when the reply goes out through the API instead.
      if (!text.trim() || Buffer.byteLength(text, 'utf8') > PASSIVE_TEXT_BYTES) return late;
      return passiveAnswer(config, m, text, encrypted, now);
    },
    timeout: late,
  };
}

/**
 * A WeChat Official Account's server callback (its 服务器地址 is `/bots/{bot_id}`). A GET is the URL
 * check: `signature` over token, timestamp and nonce, and the `echostr` returned as it came. A POST
 * carries a message, plain (signed in the query only) or, in safe mode (`encrypt_type=aes`),
 * encrypted for the AppID and signed over its ciphertext (`msg_signature`). A text or image message
 * becomes a person query keyed by the follower's OpenID, de-duplicated by MsgId; the call is held
 * for the reply (WeChat shows the answer to the callback as the reply, see `replyHold`).
 */
export function officialAccountInbound(now: () => number = Date.now): PlatformInbound<OfficialAccountConfig> {
  return {
    bodyLimitBytes: BODY_LIMIT,
    handle(req, config): WebhookOutcome {
      if (req.method !== 'GET' && req.method !== 'POST') return { kind: 'answer', answer: { status: 405, body: 'method not allowed: GET (URL check) or POST (messages)', type: 'text', headers: { Allow: 'GET, POST' } } };
      const encrypted = req.method === 'POST' && req.query['encrypt_type'] === 'aes';
      const sp = signedParams(req, encrypted ? 'msg_signature' : 'signature');
      if (!sp.ok) return sp.outcome;
      const p = sp.p;
      if (!encrypted && !verifySortedSha1([config.token, p.timestamp, p.nonce], p.signature)) return refuse(401, 'invalid signature');
      if (req.method === 'GET') {
        const echostr = req.query['echostr'];
        if (!echostr) return refuse(400, 'bad query parameter: echostr is missing');
        return { kind: 'answer', answer: { status: 200, body: echostr, type: 'text' } };
      }
      const body = req.rawBody.toString('utf8');
      let xml = body;
      if (encrypted) {
        if (!config.EncodingAESKey) return refuse(400, 'an encrypted message, but the bot has no EncodingAESKey (safe mode is off in its settings)');
        const outer = parseXmlFields(body);
        if (!outer.ok) return refuse(400, `malformed callback: ${outer.error}`);
        const envelope = EncryptedEnvelope.safeParse(outer.fields);
        if (!envelope.success) return refuse(400, `malformed callback: ${envelope.error.issues.map((i) => `${i.path.join('.') || 'xml'}: ${i.message}`).join('; ')}`);
        if (!verifySortedSha1([config.token, p.timestamp, p.nonce, envelope.data.Encrypt], p.signature)) return refuse(401, 'invalid signature');
        const d = decryptWecom(config.EncodingAESKey, envelope.data.Encrypt, config.AppID);
        if (!d.ok) return refuse(400, d.code === 'wrong_receiver' ? 'bad AppID: the message is encrypted for another AppID' : `undecryptable message: ${d.reason}`);
        xml = d.message;
      } else {
        const seconds = Number(p.timestamp);
        if (!Number.isFinite(seconds) || Math.abs(now() - seconds * 1000) > TIMESTAMP_WINDOW_MS) return refuse(401, 'invalid signature: the timestamp is outside the accepted window');
      }
      const parsed = parseOfficialAccountMessage(xml);
      if (!parsed.ok) return refuse(400, `malformed message: ${parsed.error}`);
      // Only the plain mode's signature leaves the body open: its signed query is taken once.
      const once = encrypted ? {} : { once: { id: `${p.timestamp}:${p.nonce}:${p.signature.toLowerCase()}`, ttlMs: TIMESTAMP_WINDOW_MS * 2, replayed: success } };
      const m = parsed.message;
      if (!m) return { kind: 'drop', reason: `not a message a query is made of: ${parsed.skipped ?? 'unknown'}`, ...once };
      return {
        kind: 'publish',
        ref: { msgId: m.msgId },
        ...once,
        hold: replyHold(config, m, encrypted, now),
        queries: [
          {
            sessionId: m.openId,
            launcherType: 'person',
            senderId: m.openId,
            // WeChat gives a follower's nickname to no API any more; LangBot uses the OpenID too.
            senderName: m.openId,
            messageChain: m.messageChain,
            replyTo: m.msgId,
            dedupId: m.msgId,
            stream: false,
          },
        ],
      };
    },
    // Not answered within 5 s with a 200, WeChat sends the message again (three times in all).
    answers: { ...webhookAnswers(success, (status, error) => ({ status, body: error, type: 'text' })) },
  };
}

export const officialAccountPlatform: Platform<OfficialAccountConfig> = {
  name: OFFICIAL_ACCOUNT,
  botConfigSchema: OfficialAccountConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: officialAccountInbound(),
  outbound: (deps) => new OfficialAccountAdapter(deps),
};
