import { SharedAccessTokens, webhookAnswers, type HttpAnswer, type Platform, type PlatformInbound, type WebhookOutcome } from '@conveyor/platform-kit';
import { openWecomCallback, WECOM_CALLBACK_BODY_LIMIT } from '@conveyor/wecom';
import { WecomCsAdapter } from './adapter.js';
import { WecomCsConfigSchema, type WecomCsConfig } from './config.js';
import { parseKfEvent } from './parse.js';
import { WECOM_CS } from './name.js';
import { pullKfMessages } from './pull.js';

export { WECOM_CS } from './name.js';

/** WeCom treats any 200 as received. */
const received: HttpAnswer = { status: 200, body: '', type: 'text' };

/**
 * The callback of WeCom customer service (微信客服 → API → 回调, URL `/bots/{bot_id}`), in WeCom's
 * callback wire format (see `openWecomCallback`: URL check, signature, AES for the corp id). A
 * callback carries no message, only `kf_msg_or_event` with a token and the account: the ingress
 * pulls the waiting messages (`pullKfMessages`) before it answers, so a pull that fails is answered
 * 5xx and WeCom calls again; other events are acknowledged and dropped.
 */
export const wecomCsInbound: PlatformInbound<WecomCsConfig> = {
  bodyLimitBytes: WECOM_CALLBACK_BODY_LIMIT,
  handle(req, config): WebhookOutcome {
    const opened = openWecomCallback(req, config);
    if (!opened.ok) return opened.outcome;
    const parsed = parseKfEvent(opened.xml);
    if (!parsed.ok) return { kind: 'answer', answer: { status: 400, body: `malformed event: ${parsed.error}`, type: 'text' } };
    const event = parsed.event;
    if (!event) return { kind: 'drop', reason: `not an event messages are pulled for: ${parsed.skipped ?? 'unknown'}` };
    return {
      kind: 'pull',
      ref: { openKfId: event.OpenKfId },
      // The pull is one of many replicas' token users: the Redis lock, not this object, makes them take turns.
      pull: (ctx) => pullKfMessages(ctx, { botId: req.botId, config, event, tokens: new SharedAccessTokens(ctx.redis, ctx.prefix, WECOM_CS) }),
    };
  },
  // Not answered with 200 within 5 s, WeCom sends the callback again.
  answers: webhookAnswers(received, (status, error) => ({ status, body: error, type: 'text' })),
};

export const wecomCsPlatform: Platform<WecomCsConfig> = {
  name: WECOM_CS,
  botConfigSchema: WecomCsConfigSchema,
  configurable: true,
  streamsByDefault: false,
  inbound: wecomCsInbound,
  outbound: (deps) => new WecomCsAdapter({ redis: deps.redis, prefix: deps.prefix, configs: deps.configs, ...(deps.fetchImpl ? { fetchImpl: deps.fetchImpl } : {}) }),
};
