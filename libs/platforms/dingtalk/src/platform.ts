import { headerOf, imagePlaceholders, webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { DingtalkAdapter } from './adapter.js';
import { DingtalkConfigSchema, streamsReplies, type DingtalkConfig } from './config.js';
import { dingtalkConnection } from './connection.js';
import { parseRobotMessage } from './parse.js';
import { DINGTALK } from './name.js';
import { DINGTALK_SIGN_HEADER, DINGTALK_TIMESTAMP_HEADER, dingtalkSignTtlMs, verifyDingtalkSignature } from './verify.js';

export { DINGTALK } from './name.js';

/** DingTalk takes any 200 as received; the reply goes out later through the session webhook or the OpenAPI. */
const received: HttpAnswer = { status: 200, body: {} };
const refuse = (status: number, errmsg: string): WebhookOutcome => ({ kind: 'answer', answer: { status, body: { errcode: status, errmsg } } });
const replayed: HttpAnswer = { status: 401, body: { errcode: 401, errmsg: 'invalid signature: this timestamp and sign were already used' } };

/** A robot message is a few KiB; anything near this is not DingTalk. */
const BODY_LIMIT = 256 * 1024;

/**
 * The robot's HTTP message receiving mode (`mode: http`): DingTalk POSTs each message to
 * `/bots/{bot_id}` with `timestamp` and `sign` headers (base64 HMAC-SHA256 of `timestamp\nsecret`
 * with the app secret). A bad or missing sign, a timestamp more than an hour off, or a (timestamp,
 * sign) pair already used (on any replica) is 401 and publishes nothing; a body that is no robot message is 400. A `mode: stream` bot takes no HTTP
 * callbacks (403). DingTalk's redelivery of a message is dropped by its msgId.
 */
export const dingtalkInbound: PlatformInbound<DingtalkConfig> = {
  bodyLimitBytes: BODY_LIMIT,
  handle(req, config): WebhookOutcome {
    if (config.mode !== 'http') return refuse(403, 'this bot receives messages over Stream mode (mode: stream), not HTTP callbacks');
    if (req.method !== 'POST') return { kind: 'answer', answer: { status: 405, body: { errcode: 405, errmsg: 'method not allowed: POST' }, headers: { Allow: 'POST' } } };
    const timestamp = headerOf(req.headers, DINGTALK_TIMESTAMP_HEADER);
    const sign = headerOf(req.headers, DINGTALK_SIGN_HEADER);
    const check = verifyDingtalkSignature(config.client_secret, timestamp, sign, req.now);
    if (!check.ok) return refuse(401, `invalid signature: ${check.reason}`);
    // The sign covers the timestamp and the secret, not the body: the pair is taken once, or a
    // captured one would carry any body for as long as its timestamp is in the window.
    const once = { id: `${timestamp}:${sign}`, ttlMs: dingtalkSignTtlMs(timestamp!, req.now), replayed: replayed };
    let json: unknown;
    try {
      json = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return refuse(400, 'malformed message: the body is not JSON');
    }
    const parsed = parseRobotMessage(json, config, req.botId, streamsReplies(config));
    if (!parsed.ok) return refuse(400, `malformed message: ${parsed.error}`);
    if (!parsed.query) return { kind: 'drop', reason: `not a message a query is made of: ${parsed.skipped}`, ref: parsed.ref, once };
    // Answered before anything could be downloaded: pictures stay placeholders.
    return { kind: 'publish', queries: [{ ...parsed.query, messageChain: imagePlaceholders(parsed.query.messageChain) }], ref: parsed.ref, once };
  },
  // Not answered with 200, DingTalk sends the message again.
  answers: webhookAnswers(received, (status, errmsg) => ({ status, body: { errcode: status, errmsg } })),
};

export const dingtalkPlatform: Platform<DingtalkConfig> = {
  name: DINGTALK,
  botConfigSchema: DingtalkConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: dingtalkInbound,
  connection: dingtalkConnection,
  outbound: (deps) => new DingtalkAdapter(deps.configs, deps.fetchImpl),
};
