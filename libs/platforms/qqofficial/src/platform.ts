import { z } from 'zod';
import { headerOf, webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { dispatchToQuery } from './parse.js';
import { signHex, verifyCallback } from './verify.js';
import { QqOfficialAdapter } from './adapter.js';
import { QqOfficialConfigSchema, type QqOfficialConfig } from './config.js';
import { qqOfficialConnection } from './connection.js';

/** QQ's ops of a webhook payload: 0 a dispatch, 12 our acknowledgement, 13 the callback URL validation. */
export const QQ_OP = { DISPATCH: 0, HTTP_CALLBACK_ACK: 12, VALIDATION: 13 } as const;

const Payload = z.looseObject({ id: z.string().max(256).optional(), op: z.number().int(), d: z.unknown().optional(), s: z.number().int().optional(), t: z.string().max(128).optional() });
const Validation = z.looseObject({ plain_token: z.string().min(1).max(1_000), event_ts: z.string().min(1).max(100) });

const error = (status: number, message: string): HttpAnswer => ({ status, body: { code: status, message } });
const ack: HttpAnswer = { status: 200, body: { op: QQ_OP.HTTP_CALLBACK_ACK } };

/**
 * QQ Official webhook at `/bots/{bot_id}`: every call is checked before its body is read:
 * `X-Signature-Ed25519` must be the Ed25519 signature of `X-Signature-Timestamp` + the exact body
 * under the key derived from the bot secret (else 401, nothing published). Then op 13 (QQ validating
 * the callback URL) is answered with `plain_token` and the signature of `event_ts` + `plain_token`,
 * and op 0 dispatches carrying messages become queries, acknowledged with op 12.
 */
export const qqOfficialInbound: PlatformInbound<QqOfficialConfig> = {
  handle(req, config): WebhookOutcome {
    if (!config['enable-webhook']) return { kind: 'answer', answer: error(403, 'this bot receives its messages over the WebSocket (enable-webhook is off)') };
    if (req.method !== 'POST') return { kind: 'answer', answer: { ...error(405, 'POST only'), headers: { Allow: 'POST' } } };
    const signature = headerOf(req.headers, 'x-signature-ed25519');
    const timestamp = headerOf(req.headers, 'x-signature-timestamp');
    if (!signature || !timestamp) return { kind: 'answer', answer: error(401, 'missing X-Signature-Ed25519 or X-Signature-Timestamp') };
    if (!verifyCallback(config.secret, timestamp, req.rawBody, signature)) return { kind: 'answer', answer: error(401, 'bad signature') };
    let json: unknown;
    try {
      json = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return { kind: 'answer', answer: error(400, 'body is not JSON') };
    }
    const p = Payload.safeParse(json);
    if (!p.success) return { kind: 'answer', answer: error(400, `payload: ${p.error.issues[0]?.path.join('.') || '(root)'}: ${p.error.issues[0]?.message ?? 'invalid'}`) };
    const { op, d, t, id } = p.data;
    if (op === QQ_OP.VALIDATION) {
      const v = Validation.safeParse(d);
      if (!v.success) return { kind: 'answer', answer: error(400, 'validation without plain_token and event_ts') };
      return { kind: 'answer', answer: { status: 200, body: { plain_token: v.data.plain_token, signature: signHex(config.secret, v.data.event_ts + v.data.plain_token) } } };
    }
    if (op !== QQ_OP.DISPATCH || !t) return { kind: 'drop', reason: `op ${op} is no dispatch` };
    const ref = { event: t, ...(id ? { eventId: id } : {}) };
    const outcome = dispatchToQuery(t, d, req.botId);
    if (outcome.kind === 'query') return { kind: 'publish', queries: [outcome.query], ref };
    if (outcome.kind === 'malformed') return { kind: 'answer', answer: error(400, outcome.reason) };
    return { kind: 'drop', reason: outcome.reason, ref };
  },
  answers: webhookAnswers(ack, error),
};

/**
 * QQ Official Bot API (QQ 开放平台): a bot receives at its webhook `/bots/{id}` (Ed25519-signed
 * callbacks, LangBot's way) or, with `enable-webhook` off, over the WebSocket gateway the gateway
 * service holds. Replies go out over HTTP from the dispatcher either way, whole.
 */
export const qqOfficialPlatform: Platform<QqOfficialConfig> = {
  name: 'qqofficial',
  botConfigSchema: QqOfficialConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: qqOfficialInbound,
  connection: qqOfficialConnection,
  outbound: (deps) => new QqOfficialAdapter(deps),
};
