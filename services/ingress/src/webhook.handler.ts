import type { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { LIMITS, redisKeys, type RedisKeys } from '@conveyor/contracts';
import { isBusBackpressure, PayloadTooLargeError, PayloadValidationError } from '@conveyor/bus';
import { newAcceptedMessageId, normalizeBotId } from '@conveyor/http-bot';
import { queryOf, type HttpAnswer, type InboundQuery, type LogRef, type OnceCredential, type Platform, type PlatformInbound } from '@conveyor/platform-kit';
import { INFRA, writeJson, writeText, type Infra } from '@conveyor/service-kit';
import { inSpan, meter } from '@conveyor/telemetry';
import { BotDirectory, type BotEntry } from './bot-directory.js';
import { BodyTooLargeError, readRawBody } from './raw-body.js';
import { OverloadedError, QueryPublisher, requireRedisConnected } from './query-publisher.js';
import { SyncHub } from './sync-hub.js';

const dropped = meter.createCounter('conveyor_ingress_webhook_dropped', { description: 'Webhook deliveries acknowledged without a query, by platform' });
const replays = meter.createCounter('conveyor_ingress_webhook_replayed', { description: 'Webhook requests refused for presenting a credential already used, by platform' });

export function sendAnswer(res: ServerResponse, answer: HttpAnswer): void {
  if (answer.type === 'text') writeText(res, answer.status, String(answer.body), answer.headers);
  else writeJson(res, answer.status, answer.body, answer.headers);
}

/**
 * The ingress' side of every webhook platform (see PlatformInbound): bot lookup, the body bound,
 * publishing the queries the platform parsed, and the platform's answer for each outcome. What a
 * request means is the platform package's business; nothing here names a platform.
 */
@Injectable()
export class WebhookHandler {
  private readonly keys: RedisKeys;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly bots: BotDirectory,
    private readonly queries: QueryPublisher,
    private readonly held: SyncHub,
  ) {
    this.keys = redisKeys(infra.topology.prefix);
  }

  /**
   * Claims a once-only credential for this replica: true when nobody presented it before (SET NX
   * with the credential's remaining validity as TTL, so every replica sees the claim).
   */
  private async claim(adapter: string, botId: string, once: OnceCredential): Promise<boolean> {
    requireRedisConnected(this.infra);
    const set = await this.infra.redis.set(this.keys.webhookOnce(adapter, botId, once.id), '1', 'PX', Math.ceil(once.ttlMs), 'NX');
    return set === 'OK';
  }

  /** Gives a claim back when the delivery was not taken, so the platform's retry with the same credential is. */
  private async release(adapter: string, botId: string, once: OnceCredential): Promise<void> {
    await this.infra.redis.del(this.keys.webhookOnce(adapter, botId, once.id)).catch((err: unknown) => {
      this.infra.logger.warn({ err, botId, adapter }, 'a once-only webhook credential could not be given back; the platform\'s retry of that delivery will be refused');
    });
  }

  /** A path that names the platform (`/telegram/{bot_id}`): a bot of another platform is not found there. */
  async serveByPath(platform: Platform, inbound: PlatformInbound<unknown>, rawBotId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const botId = normalizeBotId(rawBotId);
    const bot = botId ? await this.bots.find(botId) : null;
    if (!botId || !bot || bot.adapter !== platform.name) return sendAnswer(res, inbound.answers.notFound);
    return this.serve(platform, inbound, bot, '', req, res);
  }

  /** A request for `bot`, whose adapter is `platform`. */
  async serve(platform: Platform, inbound: PlatformInbound<unknown>, bot: BotEntry, subPath: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const botId = bot.id;
    const adapter = platform.name;
    if (!bot.enabled) return sendAnswer(res, inbound.answers.disabled);
    const config = platform.botConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!config.success) {
      this.infra.logger.error({ err: config.error, botId, adapter }, `${adapter} bot misconfigured`);
      return sendAnswer(res, inbound.answers.misconfigured);
    }
    // A span of its own, so the drop and failure lines below carry a trace id and the published queries continue this trace.
    await inSpan(`${adapter} webhook`, { 'conveyor.bot.id': botId, 'conveyor.adapter': adapter }, async (span) => {
      const drop = (reason: string, ref?: LogRef, answer: HttpAnswer = inbound.answers.dropped) => {
        dropped.add(1, { adapter });
        this.infra.logger.warn({ botId, adapter, ...ref, reason }, `${adapter} update dropped`);
        sendAnswer(res, answer);
      };
      const publish = (q: InboundQuery) =>
        this.queries.publish({
          botId,
          adapter,
          acceptedMessageId: q.replyTo || newAcceptedMessageId(),
          sessionId: q.sessionId,
          launcherType: q.launcherType,
          senderId: q.senderId,
          senderName: q.senderName,
          ...(q.groupName !== undefined ? { groupName: q.groupName } : {}),
          messageChain: q.messageChain,
          msgId: `${adapter}:${botId}:${q.dedupId}`,
          stream: q.stream ?? platform.streamsByDefault,
        });
      const limit = inbound.bodyLimitBytes ?? LIMITS.inboundBodyBytes;
      let rawBody: Buffer;
      try {
        rawBody = await readRawBody(req, limit);
      } catch (err) {
        if (err instanceof BodyTooLargeError) return drop(`the body is larger than ${limit} bytes`, undefined, inbound.answers.tooLarge);
        throw err;
      }
      const outcome = inbound.handle({ botId, subPath, method: (req.method ?? 'GET').toUpperCase(), query: queryOf(req.url ?? '/'), headers: req.headers, rawBody, now: new Date() }, config.data);
      span.setAttribute('conveyor.webhook.outcome', outcome.kind);
      if (outcome.kind === 'publish') span.setAttribute('conveyor.webhook.queries', outcome.queries.length);
      if (outcome.kind === 'answer') return sendAnswer(res, outcome.answer);
      const once = outcome.kind === 'pull' ? undefined : outcome.once;
      if (once) {
        let first: boolean;
        try {
          first = await this.claim(adapter, botId, once);
        } catch (err) {
          // Without the claim the replay check cannot be made; the platform retries later.
          this.infra.logger.error({ err, botId, adapter, ...outcome.ref }, `${adapter} update not accepted`);
          return sendAnswer(res, err instanceof OverloadedError ? inbound.answers.overloaded : inbound.answers.failed);
        }
        if (!first) {
          replays.add(1, { adapter });
          span.setAttribute('conveyor.webhook.outcome', 'replayed');
          this.infra.logger.warn({ botId, adapter, ...outcome.ref }, `${adapter} request refused: its credential was already used`);
          return sendAnswer(res, once.replayed);
        }
      }
      if (outcome.kind === 'drop') return drop(outcome.reason, outcome.ref);
      if (outcome.kind === 'pull') {
        let answer: HttpAnswer | void;
        try {
          answer = await outcome.pull({
            redis: this.infra.redis,
            prefix: this.infra.topology.prefix,
            logger: this.infra.logger,
            publish: async (q) => {
              try {
                await publish(q);
              } catch (err) {
                if (!(err instanceof PayloadTooLargeError || err instanceof PayloadValidationError)) throw err;
                dropped.add(1, { adapter });
                this.infra.logger.warn({ botId, adapter, ...outcome.ref, dedupId: q.dedupId, reason: err.message }, `${adapter} message dropped`);
              }
            },
          });
        } catch (err) {
          this.infra.logger.error({ err, botId, adapter, ...outcome.ref }, `${adapter} messages not pulled`);
          return sendAnswer(res, err instanceof OverloadedError || isBusBackpressure(err) ? inbound.answers.overloaded : inbound.answers.failed);
        }
        return sendAnswer(res, answer ?? inbound.answers.accepted);
      }
      // Registered before publishing, so a reply that is quick cannot pass the call by. Another call
      // already waiting for the key (the platform's retry of the delivery) leaves this one unheld.
      let hold: Awaited<ReturnType<SyncHub['register']>> = null;
      if (outcome.hold) {
        try {
          hold = await this.held.register(botId, outcome.hold.key, outcome.hold.waitMs);
        } catch (err) {
          this.infra.logger.warn({ err, botId, adapter, ...outcome.ref }, `${adapter} call not held for its reply; the reply goes out through the platform's API`);
        }
      }
      try {
        // In order, each with the platform's id as its JetStream message id: when one fails and the
        // platform sends the delivery again, those already published are dropped as duplicates.
        for (const q of outcome.queries) await publish(q);
      } catch (err) {
        await hold?.release().catch(() => undefined);
        // Nothing built from this delivery fits the bus (e.g. a text near 1 MiB): retrying cannot help.
        if (err instanceof PayloadTooLargeError || err instanceof PayloadValidationError) return drop(err.message, outcome.ref);
        const overloaded = err instanceof OverloadedError || isBusBackpressure(err);
        if (once) await this.release(adapter, botId, once);
        this.infra.logger.error({ err, botId, adapter, ...outcome.ref }, `${adapter} update not accepted`);
        return sendAnswer(res, overloaded ? inbound.answers.overloaded : inbound.answers.failed);
      }
      if (outcome.hold) {
        const parts = hold ? await hold.wait() : [];
        span.setAttribute('conveyor.webhook.held', parts.length > 0 ? 'answered' : 'timeout');
        return sendAnswer(res, parts.length > 0 ? outcome.hold.answer(parts) : outcome.hold.timeout);
      }
      sendAnswer(res, outcome.accepted ?? inbound.answers.accepted);
    });
  }
}
