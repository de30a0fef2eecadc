import { context, propagation } from '@opentelemetry/api';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { ReplyRoute, Topology } from '@conveyor/contracts';
import type { CachedBotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, PlatformLogger, SendResult } from '@conveyor/platform-kit';
import { callbackTimeoutMs, outboundSigningKey, safeParseAdapterConfig } from './adapter-config.js';
import { callbackBody } from './callback.js';
import { deliverCallback } from './callback-client.js';
import { SyncRegistrations, type SyncAck, type SyncPart } from './sync-relay.js';
import type { RedisClient } from '@conveyor/redis-scripts';

export interface HttpBotAdapterOptions {
  redis: RedisClient;
  prefix: string;
  topology: Topology;
  /** For /sync diversion; without it every part goes to the callback. */
  nc?: NatsConnection;
  configs: CachedBotConfigs;
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

  private readonly syncCalls: SyncRegistrations;

  constructor(private readonly o: HttpBotAdapterOptions) {
    this.syncCalls = new SyncRegistrations(o.redis, o.prefix);
  }

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
    if (await this.divertToSync(route, reply, ctx.sequence)) return { delivered: true };
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

  private async divertToSync(route: ReplyRoute, reply: OutboundReply, sequence: number): Promise<boolean> {
    if (!this.o.nc) return false;
    // Without Redis no /sync call can be found; the callback is the protocol's default route.
    const instance = await this.syncCalls.holder(route.botId, route.sessionId).catch(() => null);
    if (!instance) return false;
    const part: SyncPart = { botId: route.botId, sessionId: route.sessionId, message: reply.message, isFinal: reply.isFinal, stream: reply.stream, sequence };
    const h = natsHeaders();
    propagation.inject(context.active(), h, { set: (c, k, v) => c.set(k, v) });
    try {
      const res = await this.o.nc.request(this.o.topology.subjects.syncReply(instance), JSON.stringify(part), { timeout: 5_000, headers: h });
      return (res.json() as SyncAck).taken === true;
    } catch (err) {
      // No responder (that ingress is gone) or no answer: the callback gets it. Say so, since a
      // misconfigured broker (a permission fault) shows up only as /sync calls that never answer.
      this.o.logger?.warn({ err, botId: route.botId, sessionId: route.sessionId, instance }, 'reply part not handed to the waiting /sync call; sending it by callback');
      return false;
    }
  }
}
