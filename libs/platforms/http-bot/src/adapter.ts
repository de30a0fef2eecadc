import type { NatsConnection } from '@nats-io/transport-node';
import type { ReplyRoute, Topology } from '@conveyor/contracts';
import { handToHeldCall, type BotConfigs, type DeliveryContext, type OutboundReply, type PlatformAdapter, type PlatformLogger, type SendResult } from '@conveyor/platform-kit';
import { callbackTimeoutMs, outboundSigningKey, safeParseAdapterConfig } from './adapter-config.js';
import { callbackBody } from './callback.js';
import { deliverCallback } from './callback-client.js';
import type { RedisClient } from '@conveyor/redis-scripts';

export interface HttpBotAdapterOptions {
  redis: RedisClient;
  prefix: string;
  topology: Topology;
  /** For /sync diversion; without it every part goes to the callback. */
  nc?: NatsConnection;
  configs: BotConfigs;
  /** Where a /sync hand-over that failed for another reason than the caller being gone is reported. */
  logger?: PlatformLogger;
}

/**
 * LangBot's HTTP-bot outbound: a signed callback per part, numbered per session, retried with
 * backoff, or diverted to a waiting `/sync` call. The sequence and timestamp
 * come from the delivery layer, fixed when the part was taken for sending, so a part sent again after a
 * dispatcher crash is byte-identical: `(session_id, reply_to, sequence)` is its idempotency key at the
 * receiver.
 */
export class HttpBotAdapter implements PlatformAdapter {
  readonly name = 'http-bot' as const;

  constructor(private readonly o: HttpBotAdapterOptions) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.o.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = safeParseAdapterConfig(bot.adapterConfig);
    if (!parsed.success) return { delivered: false, reason: `bot ${route.botId} is misconfigured: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
    const config = parsed.data;
    const body = callbackBody({
      sessionId: route.sessionId,
      replyTo: route.replyTo,
      sequence: ctx.sequence,
      isFinal: reply.isFinal,
      stream: reply.stream,
      message: reply.message,
      timestamp: ctx.timestamp,
    });
    const part = { botId: route.botId, sessionId: route.sessionId, message: reply.message, isFinal: reply.isFinal, stream: reply.stream, sequence: ctx.sequence };
    // A held /sync marks its session before the message is published: a part taken without the mark
    // has no call to look for.
    if (ctx.heldCallPossible !== false && (await handToHeldCall(this.o, part))) return { delivered: true };
    if (!config.callback_url) return { delivered: false, reason: 'callback_url is empty' };
    const outcome = await deliverCallback({
      url: config.callback_url,
      body,
      secret: outboundSigningKey(config),
      timeoutMs: callbackTimeoutMs(config),
      maxRetries: config.callback_max_retries,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    if (outcome.delivered) return { delivered: true };
    return { delivered: false, reason: `${outcome.error ?? `callback answered ${outcome.lastStatus}`} after ${outcome.attempts} attempt(s)` };
  }
}
