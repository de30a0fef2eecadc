import { inboundQuery, headerOf, webhookAnswers, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { LineAdapter } from './adapter.js';
import { LineConfigSchema, type LineConfig } from './config.js';
import { parseLineBody } from './parse.js';
import { LINE } from './name.js';
import { LINE_SIGNATURE_HEADER, verifyLineSignature } from './verify.js';

export { LINE } from './name.js';

const ok = { status: 200, body: { ok: true } };
const malformed = (error: string): WebhookOutcome => ({ kind: 'answer', answer: { status: 400, body: { ok: false, error: `malformed webhook: ${error}` } } });

/**
 * The LINE Messaging API webhook (the channel's Webhook URL is `/bots/{bot_id}`): `X-Line-Signature`
 * is checked over the exact body before anything else; each text message event becomes a query,
 * de-duplicated by its webhookEventId (LINE redelivers with the same id). The reply token rides in
 * the route's `replyTo`.
 */
export const lineInbound: PlatformInbound<LineConfig> = {
  handle(req, config): WebhookOutcome {
    if (!verifyLineSignature(config.channel_secret, headerOf(req.headers, LINE_SIGNATURE_HEADER), req.rawBody)) {
      return { kind: 'answer', answer: { status: 401, body: { ok: false, error: 'invalid signature' } } };
    }
    let body: unknown;
    try {
      body = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return malformed('the body is not valid JSON');
    }
    const parsed = parseLineBody(body, req.botId);
    if (!parsed.ok) return malformed(parsed.error);
    return {
      kind: 'publish',
      ...(parsed.inbound.length ? { ref: { eventIds: parsed.inbound.map((m) => m.eventId).join(',') } } : {}),
      queries: parsed.inbound.map((m) => (inboundQuery(m, { replyTo: m.replyToken ?? m.eventId, dedupId: m.eventId, stream: false }))),
    };
  },
  // LINE redelivers a webhook that failed, when redelivery is switched on for the channel.
  answers: webhookAnswers(ok, (status, error) => ({ status, body: { ok: false, error } })),
};

export const linePlatform: Platform<LineConfig> = {
  name: LINE,
  botConfigSchema: LineConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: lineInbound,
  outbound: (deps) => new LineAdapter(deps.configs),
};
