import { webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type WebhookOutcome, type WebhookRequest } from '@conveyor/platform-kit';
import { WecomAdapter } from './adapter.js';
import { WecomConfigSchema, type WecomConfig } from './config.js';
import { decryptWecom, verifyWecomSignature } from './verify.js';
import { EncryptedEnvelope, parseWecomMessage, parseXmlFields, wecomReplyTo } from './parse.js';
import { WECOM } from './name.js';

export { WECOM } from './name.js';

/** WeCom treats any 200 as received; an empty body means no passive reply (the answer is sent later). */
const received: HttpAnswer = { status: 200, body: '', type: 'text' };
const refuse = (status: number, error: string): WebhookOutcome => ({ kind: 'answer', answer: { status, body: error, type: 'text' } });

/** A callback message is a few hundred bytes; anything near this is not WeCom. */
export const WECOM_CALLBACK_BODY_LIMIT = 64 * 1024;

/** A WeCom callback's signed query parameters (`msg_signature`, timestamp, nonce), or the answer naming the one missing. */
export function wecomSignedParams(req: WebhookRequest): { ok: true; signature: string; timestamp: string; nonce: string } | { ok: false; outcome: WebhookOutcome } {
  const { msg_signature: signature, timestamp, nonce } = req.query;
  if (!signature) return { ok: false, outcome: refuse(401, 'invalid signature: missing msg_signature') };
  const bad = (name: string) => ({ ok: false as const, outcome: refuse(400, `bad query parameter: ${name} is missing or too long`) });
  if (!timestamp || timestamp.length > 64) return bad('timestamp');
  if (!nonce || nonce.length > 64) return bad('nonce');
  return { ok: true, signature, timestamp, nonce };
}

/**
 * Signature, then decryption for this bot's corp id; the codes of a refused ciphertext become the
 * reasons the caller sees (400: retrying the same bytes cannot help).
 */
function open(config: WecomCallbackSettings, p: { signature: string; timestamp: string; nonce: string }, encrypted: string, what: string): { ok: true; plain: string } | { ok: false; outcome: WebhookOutcome } {
  if (!verifyWecomSignature(config.token, p.timestamp, p.nonce, encrypted, p.signature)) return { ok: false, outcome: refuse(401, 'invalid signature') };
  const d = decryptWecom(config.EncodingAESKey, encrypted, config.corpid);
  if (d.ok) return { ok: true, plain: d.message };
  const label = d.code === 'wrong_receiver' ? 'bad corp id' : `undecryptable ${what}`;
  return { ok: false, outcome: refuse(400, `${label}: ${d.reason}`) };
}

/** The callback settings every WeCom callback is checked with (an app's, a customer-service account's). */
export interface WecomCallbackSettings {
  token: string;
  EncodingAESKey: string;
  /** The receiver id every callback is encrypted for. */
  corpid: string;
}

/**
 * A WeCom callback opened (the wire format of app and customer-service callbacks alike): a GET is
 * the URL check, answered with the signed `echostr` decrypted; a POST's encrypted message comes
 * back as its XML once its signature holds and it decrypts for the corp id. Anything else is the
 * answer to send (401 for a signature, 400 for what cannot be read, 405 for another method).
 */
export function openWecomCallback(req: WebhookRequest, config: WecomCallbackSettings): { ok: true; xml: string } | { ok: false; outcome: WebhookOutcome } {
  const answer = (outcome: WebhookOutcome) => ({ ok: false as const, outcome });
  if (req.method !== 'GET' && req.method !== 'POST') return answer({ kind: 'answer', answer: { status: 405, body: 'method not allowed: GET (URL check) or POST (messages)', type: 'text', headers: { Allow: 'GET, POST' } } });
  const p = wecomSignedParams(req);
  if (!p.ok) return p;
  if (req.method === 'GET') {
    const echostr = req.query['echostr'];
    if (!echostr) return answer(refuse(400, 'bad query parameter: echostr is missing'));
    const opened = open(config, p, echostr, 'echostr');
    return answer(opened.ok ? { kind: 'answer', answer: { status: 200, body: opened.plain, type: 'text' } } : opened.outcome);
  }
  const outer = parseXmlFields(req.rawBody.toString('utf8'));
  if (!outer.ok) return answer(refuse(400, `malformed callback: ${outer.error}`));
  const envelope = EncryptedEnvelope.safeParse(outer.fields);
  if (!envelope.success) return answer(refuse(400, `malformed callback: ${envelope.error.issues.map((i) => `${i.path.join('.') || 'xml'}: ${i.message}`).join('; ')}`));
  const opened = open(config, p, envelope.data.Encrypt, 'message');
  return opened.ok ? { ok: true, xml: opened.plain } : opened;
}

/**
 * The callback of a WeCom self-built app (its 接收消息 URL is `/bots/{bot_id}`). A GET is the URL
 * check: the signed `echostr` is decrypted and its plaintext returned. A POST carries an encrypted
 * message, signed over its ciphertext; a text or image message becomes a person query keyed by the
 * member (app messages are 1:1), de-duplicated by MsgId (WeCom sends a callback again when it had
 * no answer within 5 s), and WeCom gets an empty 200 at once: the reply goes out through the API.
 */
export const wecomInbound: PlatformInbound<WecomConfig> = {
  bodyLimitBytes: WECOM_CALLBACK_BODY_LIMIT,
  handle(req, config): WebhookOutcome {
    const opened = openWecomCallback(req, config);
    if (!opened.ok) return opened.outcome;
    const parsed = parseWecomMessage(opened.xml);
    if (!parsed.ok) return refuse(400, `malformed message: ${parsed.error}`);
    const m = parsed.message;
    if (!m) return { kind: 'drop', reason: `not a message a query is made of: ${parsed.skipped ?? 'unknown'}` };
    return {
      kind: 'publish',
      ref: { msgId: m.msgId, agentId: m.agentId },
      queries: [
        {
          sessionId: m.userId,
          launcherType: 'person',
          senderId: m.userId,
          // LangBot's adapter looks the member's name up in the contacts API and falls back to the id.
          senderName: m.userId,
          messageChain: m.messageChain,
          replyTo: wecomReplyTo(m.agentId, m.msgId),
          dedupId: m.msgId,
          stream: false,
        },
      ],
    };
  },
  // Not answered with 200, WeCom sends the callback again (three times in all).
  answers: webhookAnswers(received, (status, error) => ({ status, body: error, type: 'text' })),
};

export const wecomPlatform: Platform<WecomConfig> = {
  name: WECOM,
  botConfigSchema: WecomConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: wecomInbound,
  outbound: (deps) => new WecomAdapter(deps.configs, deps.fetchImpl),
};
