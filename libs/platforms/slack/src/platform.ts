import { headerOf, webhookAnswers, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { SlackAdapter } from './adapter.js';
import { SlackConfigSchema, type SlackConfig } from './config.js';
import { parseSlackBody, slackQuery } from './parse.js';
import { slackConnection } from './connection.js';
import { SLACK } from './name.js';
import { SLACK_SIGNATURE_HEADER, SLACK_TIMESTAMP_HEADER, verifySlackRequest } from './verify.js';

export { SLACK } from './name.js';

const ok = { status: 200, body: { ok: true } };
const malformed = (error: string): WebhookOutcome => ({ kind: 'answer', answer: { status: 400, body: { ok: false, error: `malformed event: ${error}` } } });

/**
 * The Slack Events API webhook (the app's Request URL is `/bots/{bot_id}`). Every request is signed;
 * the signature and the five-minute timestamp window are checked before the body is looked at. The
 * `url_verification` challenge is echoed. Messages are published and answered 200 at once, well
 * within Slack's 3 s; a retry of an event (Slack retries after 3 s or a non-2xx) is dropped by its
 * event_id in JetStream's duplicate window.
 */
export const slackInbound: PlatformInbound<SlackConfig> = {
  handle(req, config): WebhookOutcome {
    const verified = verifySlackRequest(config.signing_secret, headerOf(req.headers, SLACK_SIGNATURE_HEADER), headerOf(req.headers, SLACK_TIMESTAMP_HEADER), req.rawBody, req.now);
    if (!verified.ok) return { kind: 'answer', answer: { status: 401, body: { ok: false, error: `invalid signature: ${verified.reason}` } } };
    let body: unknown;
    try {
      body = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return malformed('the body is not valid JSON');
    }
    const parsed = parseSlackBody(body, req.botId);
    switch (parsed.kind) {
      case 'malformed':
        return malformed(parsed.error);
      case 'challenge':
        return { kind: 'answer', answer: { status: 200, body: parsed.challenge, type: 'text' } };
      case 'ignored':
        return { kind: 'publish', queries: [] };
      case 'message':
        return { kind: 'publish', ref: { eventId: parsed.inbound.eventId }, queries: [slackQuery(parsed.inbound, config['enable-stream-reply'])] };
    }
  },
  // Slack retries a non-2xx answer (three times, backing off).
  answers: webhookAnswers(ok, (status, error) => ({ status, body: { ok: false, error } })),
};

export const slackPlatform: Platform<SlackConfig> = {
  name: SLACK,
  botConfigSchema: SlackConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: slackInbound,
  connection: slackConnection,
  outbound: (deps) => new SlackAdapter(deps.configs, deps.fetchImpl),
};
